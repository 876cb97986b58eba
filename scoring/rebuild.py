"""Rebuild the live boards of a game from the ledger, into fresh keys, then swap them in.

Phase 1 (boards keep updating): stream each board kind's members from the ledger
(`selectors.ledger_entries`, one kind per query, through a server-side cursor) into staged copies
under `<key>:rebuild` (`boards.staging.BoardStager`, pipelined ZADDs): memory stays flat however
many players the season has. Phase 2 (the game's apply is paused, a few hundred ms): in one
snapshot of the ledger, recompute the players who had results since phase 1 began, mark every
accepted but unapplied event as applied (dedup marker and `applied_at`, since the new boards hold
it), then rename the new keys over the live ones. Events that arrive during phase 2 wait (the
apply script answers "paused") and are applied to the new boards by the relay afterwards: none is
lost and none counts twice.

A rebuild of some kinds only (`kinds=["all"]`) leaves the other kinds' live boards alone, so it
cannot mark unapplied results as applied: they still have to reach those other boards. Instead
its boards leave out every result whose dedup marker is not set yet (the worker has not applied
it: it will, to every board, after the swap) and keep those whose marker is set (applied to the
live boards, the `applied_at` write pending).
"""

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from boards.codec import ScoreCodec
from boards.kinds import KINDS
from boards.staging import (
    BoardStager,
    Progress,
    board_stage_patch,
    boards_swap,
    friends_rebuild,
    game_paused,
    hidden_rebuild,
    names_rebuild,
)
from boards.writer import dedup_mark, dedup_marked
from seasons.models import Game, TieRule
from seasons.selectors import seasons_of

from .models import EventStatus, ScoreEvent
from .selectors import (
    ledger_boards,
    ledger_entries,
    ledger_has_extra_boards,
    players_touched_since,
    unapplied_events,
)

logger = logging.getLogger(__name__)

# Results accepted this long before phase 1 began are recomputed again in phase 2 (covers
# transactions that took their accept time before phase 1 but committed after it).
TOUCHED_MARGIN_S = 60


@dataclass
class RebuildReport:
    kinds: tuple[str, ...] = ()
    boards: int = 0
    members: int = 0
    recomputed_players: int = 0
    marked_applied: int = 0
    left_to_the_worker: int = 0
    removed_keys: int = 0
    staged_s: float = 0.0  # phase 1: the boards streamed into their staged copies
    paused_s: float = 0.0  # phase 2: how long the game's applies waited


def boards_rebuild(
    *, game: Game, kinds: Sequence[str] | None = None, progress: Progress | None = None
) -> RebuildReport:
    """Rebuild the live boards of `game` from the ledger (see the module docstring): every kind, or
    those named in `kinds`. `progress` is called with the number of members written, as they go.
    Pauses the game's applies for phase 2."""
    chosen = [KINDS[name] for name in kinds] if kinds else list(KINDS.values())
    partial = {kind.name for kind in chosen} != set(KINDS)
    dense = game.tie_rule == TieRule.DENSE
    report = RebuildReport(kinds=tuple(kind.name for kind in chosen))
    started = timezone.now()
    clock = time.monotonic()
    codecs = {s.id: ScoreCodec(s.time_bits) for s in seasons_of(game=game)}

    # Phase 1: everything, while the boards keep updating. The dense rule's companions are written
    # from each board's points in display order, so only then is the ledger asked to sort.
    with BoardStager(game=game.slug, dense=dense, codecs=codecs, progress=progress) as stager:
        for season_id in codecs:  # a season at a time: the ledger reads it in player order
            extras = ledger_has_extra_boards(game=game, season_id=season_id)
            for kind in chosen:
                with ledger_entries(
                    game=game, kinds=[kind], season_id=season_id, ordered=dense, live_at=started, extras=extras
                ) as chunks:
                    for rows in chunks:
                        stager.write(rows)
        staged = stager.finish(now=started)
    report.boards = len(staged)
    report.members = stager.members
    names_rebuild(game=game)
    hidden_rebuild(game=game)
    friends_rebuild(game=game)
    report.staged_s = round(time.monotonic() - clock, 2)

    # Phase 2: paused; recompute who moved, mark the unapplied as applied, swap.
    clock = time.monotonic()
    with game_paused(game.slug, "rebuild"):
        outermost = not connection.in_atomic_block
        with transaction.atomic():
            if outermost:  # one snapshot for the recompute and the marks
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            now = timezone.now()
            touched = players_touched_since(game=game, since=started - timedelta(seconds=TOUCHED_MARGIN_S))
            pending = unapplied_events(game=game)
            waiting: list[int] = []
            if partial:  # the worker will apply these to every board, the rebuilt ones included
                marked = dedup_marked(event_ids=[event_id for event_id, _ in pending])
                waiting = [event_id for event_id, _ in pending if event_id not in marked]
                touched |= {player for event_id, player in pending if event_id not in marked}
            fresh = (
                ledger_boards(game=game, player_ids=touched, kinds=chosen, exclude_event_ids=waiting or None)
                if touched
                else {}
            )
        report.recomputed_players = len(touched)
        board_stage_patch(staged=staged, fresh=fresh, players=touched, dense=dense, codecs=codecs, now=now)
        if partial:
            report.left_to_the_worker = len(waiting)
        else:
            report.marked_applied = _mark_applied([event_id for event_id, _ in pending])
        report.removed_keys = boards_swap(
            game=game.slug, board_keys=set(staged), dense=dense, kinds=report.kinds if partial else None
        )
    report.paused_s = round(time.monotonic() - clock, 2)
    report.boards = len(staged)
    logger.info("rebuild of %s: %s", game.slug, report)
    return report


def _mark_applied(event_ids: list[int]) -> int:
    """The rebuilt boards hold these events: set their dedup markers, then their applied flag."""
    if not event_ids:
        return 0
    dedup_mark(event_ids=event_ids, ttl_s=settings.SCORING_DEDUP_TTL_S)
    return ScoreEvent.objects.filter(id__in=event_ids, status=EventStatus.ACCEPTED, applied_at__isnull=True).update(
        applied_at=timezone.now()
    )
