"""Rebuild every live board of a game from the ledger, into fresh keys, then swap them in.

Phase 1 (boards keep updating): compute each board from the ledger and stage it under
`<key>:rebuild` (boards/staging.py). Phase 2 (the game's apply is paused, a few hundred ms): in one
snapshot of the ledger, recompute the players who had results since phase 1 began, mark every
accepted but unapplied event as applied (dedup marker and `applied_at`, since the new boards hold
it), then rename the new keys over the live ones. Events that arrive during phase 2 wait (the
apply script answers "paused") and are applied to the new boards by the relay afterwards: none is
lost and none counts twice.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from boards.codec import ScoreCodec
from boards.staging import (
    Progress,
    board_stage,
    board_stage_patch,
    boards_swap,
    friends_rebuild,
    game_paused,
    hidden_rebuild,
    names_rebuild,
)
from boards.tally import BoardScores
from boards.writer import dedup_mark
from common.redis import client
from seasons.models import Game, TieRule
from seasons.selectors import seasons_of

from .models import EventStatus, ScoreEvent
from .selectors import ledger_boards, players_touched_since, unapplied_ids

logger = logging.getLogger(__name__)

# Results accepted this long before phase 1 began are recomputed again in phase 2 (covers
# transactions that took their accept time before phase 1 but committed after it).
TOUCHED_MARGIN_S = 60


@dataclass
class RebuildReport:
    boards: int = 0
    members: int = 0
    recomputed_players: int = 0
    marked_applied: int = 0
    removed_keys: int = 0


def _live(boards: dict[str, BoardScores], now: datetime) -> dict[str, BoardScores]:
    return {k: b for k, b in boards.items() if not b.expired(now)}


def boards_rebuild(*, game: Game, progress: Progress | None = None, on_total: Progress | None = None) -> RebuildReport:
    """Rebuild all live boards of `game` from the ledger (see the module docstring)."""
    dense = game.tie_rule == TieRule.DENSE
    report = RebuildReport()
    started = timezone.now()
    codecs = {s.id: ScoreCodec(s.time_bits) for s in seasons_of(game=game)}

    def codec_of(board: BoardScores) -> ScoreCodec:
        return codecs[board.ref.season_id]

    # Phase 1: everything, while the boards keep updating.
    boards = _live(ledger_boards(game=game), started)
    if on_total:
        on_total(sum(len(b.scores) for b in boards.values()))
    pipe = client().pipeline(transaction=False)
    for board in boards.values():
        board_stage(pipe, board, dense=dense, codec=codec_of(board), now=started, progress=progress)
        pipe.execute()
    report.boards = len(boards)
    report.members = sum(len(b.scores) for b in boards.values())
    names_rebuild(game=game)
    hidden_rebuild(game=game)
    friends_rebuild(game=game)

    # Phase 2: paused; recompute who moved, mark the unapplied as applied, swap.
    with game_paused(game.slug, "rebuild"):
        outermost = not connection.in_atomic_block
        with transaction.atomic():
            if outermost:  # one snapshot for the recompute and the marks
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            now = timezone.now()
            touched = players_touched_since(game=game, since=started - timedelta(seconds=TOUCHED_MARGIN_S))
            fresh = _live(ledger_boards(game=game, player_ids=touched), now) if touched else {}
            pending = unapplied_ids(game=game)
        report.recomputed_players = len(touched)
        board_stage_patch(staged=boards, fresh=fresh, players=touched, dense=dense, codec_of=codec_of, now=now)
        report.marked_applied = _mark_applied(pending)
        report.removed_keys = boards_swap(game=game.slug, board_keys=set(boards), dense=dense)
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
