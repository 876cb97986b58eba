"""Rebuild the live boards of a game from the ledger, into fresh keys, then swap them in.

Phase 1 (boards keep updating): stream each board kind's members from the ledger
(`selectors.ledger_entries`, one kind per query, through a server-side cursor) into staged copies
under `<key>:rebuild` (`boards.staging.BoardStager`, pipelined ZADDs): memory stays flat however
many players the season has. Phase 2 (the game's apply is paused, a few hundred ms): in one
snapshot of the ledger, recompute the players who had results since phase 1 began, then rename
the new keys over the live ones and, in the same MULTI, set the dedup markers of every accepted
but unapplied event (the new boards hold it), then take it out of the outbox. Events that arrive
during phase 2 wait (the apply script answers "paused") and are applied to the new boards by the relay
afterwards: none is lost and none counts twice. (The apply task retries a paused batch a
moment later, scoring/tasks.py, so they wait about as long as the pause, not the relay's delay.)
Every board swapped in is marked changed for the live publisher, which pushes those whose top 10
differs from the one it sent last.

A whole rebuild (every kind, every shard) also rewrites the boards of the game's tournament
periods whose grace has not ended from the ledger, in phase 2 after the swap
(`entries.tournament_boards_rebuild`): the swap took the unapplied results out of the outbox, and
a flushed Redis lost those boards too. Their counters (entrants, attempts) refill themselves from
the database on their next use. So do the game's league periods whose grace has not ended
(`league_corrections.league_boards_rebuild`): their assignment state filled from the stored seats
when Redis lost it, every cohort board rewritten from the ledger.

One rebuild of a game runs at a time (`lb:rebuild-lock:{game}`, waited for): two would write the
same staged copies. A rebuild that loses the lock (Redis flushed under it, so its staged copies
went too) stops before it swaps anything in (LockLost).

`live_only` rebuilds the seasons not frozen yet and leaves the others' keys alone: a frozen
season is read from its standings, and its keys expire or were archived (the recovery of a
flushed Redis rebuilds this way; `rebuild_boards` rebuilds every season).

A rebuild of some kinds only (`kinds=["all"]`) leaves the other kinds' live boards alone, so it
cannot mark unapplied results as applied: they still have to reach those other boards. Instead
its boards leave out every result whose dedup marker is not set yet (the worker has not applied
it: it will, to every board, after the swap) and keep those whose marker is set (applied to the
live boards, the outbox row's delete pending).
"""

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from boards.codec import ScoreCodec
from boards.keys import MarkedEvent, rebuild_lock_key
from boards.kinds import KINDS, BoardKind
from boards.ranking import needs_distinct_points
from boards.slots import EventSlots
from boards.staging import (
    BoardStager,
    Progress,
    StagedBoard,
    board_stage_patch,
    boards_swap,
    friends_rebuild,
    game_paused,
    hidden_rebuild,
    names_rebuild,
)
from boards.tally import BoardScores
from boards.writer import boards_touched, dedup_marked
from common.locks import HeldLock, LockLost, lock_held
from seasons.models import Game
from seasons.selectors import seasons_of

from .entries import tournament_boards_rebuild
from .league_corrections import league_boards_rebuild
from .outbox import outbox_applied
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
# How long a rebuild waits for another rebuild of the same game to end.
REBUILD_LOCK_WAIT_S = 900.0


class RebuildBusy(Exception):
    """Another rebuild of the game held its lock for longer than the wait."""


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
    *,
    game: Game,
    kinds: Sequence[str] | None = None,
    progress: Progress | None = None,
    live_only: bool = False,
    shard: int | None = None,
    lock_wait_s: float = REBUILD_LOCK_WAIT_S,
) -> RebuildReport:
    """Rebuild the live boards of `game` from the ledger (see the module docstring): every kind, or
    those named in `kinds`; every season, or with `live_only` those not frozen. `progress` is
    called with the number of members written, as they go. Holds the game's rebuild lock (waits
    up to `lock_wait_s` for it, else RebuildBusy; LockLost when Redis loses it meanwhile) and
    pauses the game's applies for phase 2."""
    with lock_held(rebuild_lock_key(game.slug), wait_s=lock_wait_s) as lock:
        if lock is None:
            raise RebuildBusy(game.slug)
        return _rebuild(game=game, kinds=kinds, progress=progress, live_only=live_only, shard=shard, lock=lock)


def _rebuild(
    *,
    game: Game,
    kinds: Sequence[str] | None,
    progress: Progress | None,
    live_only: bool,
    shard: int | None,
    lock: HeldLock,
) -> RebuildReport:
    """The two phases of `boards_rebuild`, the game's rebuild lock held by the caller."""
    chosen = [KINDS[name] for name in kinds] if kinds else list(KINDS.values())
    report = RebuildReport(kinds=tuple(kind.name for kind in chosen))
    started = timezone.now()
    clock = time.monotonic()
    scope = _scope(game=game, chosen=chosen, live_only=live_only, shard=shard)
    # Phase 1: everything, while the boards keep updating.
    staged = _boards_stage(game=game, scope=scope, started=started, progress=progress, lock=lock, report=report)
    report.staged_s = round(time.monotonic() - clock, 2)

    # Phase 2: paused; recompute who moved, mark the unapplied as applied, swap.
    clock = time.monotonic()
    with game_paused(game.slug, "rebuild"):
        moved = _moved_meanwhile(game=game, scope=scope, started=started)
        report.recomputed_players = len(moved.touched)
        board_stage_patch(
            staged=staged,
            fresh=moved.fresh,
            players=moved.touched,
            dense=scope.dense,
            codecs=scope.codecs,
            now=moved.now,
        )
        lock.check()  # still ours, so the staged copies are whole: nothing is marked or swapped otherwise
        _boards_swap_in(game=game, scope=scope, staged=staged, moved=moved, report=report)
        if not scope.partial:  # the swap took the unapplied results out of the outbox
            tournament_players = tournament_boards_rebuild(game=game, now=moved.now)
            logger.info("rebuild of %s: %d tournament scores rewritten", game.slug, tournament_players)
            league_players = league_boards_rebuild(game=game, now=moved.now)
            logger.info("rebuild of %s: %d league cohort scores rewritten", game.slug, league_players)
    report.paused_s = round(time.monotonic() - clock, 2)
    # The live publisher compares each rebuilt board's top 10 with the one it sent last and pushes
    # those that differ: a result that arrived while Redis was empty, or that the rebuild took in
    # from the outbox, reaches the live pages now, not at the board's next result.
    boards_touched({board.ref.whole.key for board in staged.values()})
    report.boards = len(staged)
    logger.info("rebuild of %s: %s", game.slug, report)
    return report


@dataclass(frozen=True, slots=True)
class _Scope:
    """What one rebuild covers: the kinds of board, the seasons (by their codecs), one shard or all."""

    chosen: list[BoardKind]
    partial: bool  # one kind of board, or one shard of the split seasons: the rest is the worker's
    dense: bool
    codecs: dict[int, ScoreCodec]  # the seasons rebuilt
    shards: dict[int, int]  # the board shards of each
    live_only: bool
    shard: int | None

    @property
    def some_seasons(self) -> bool:
        """Only some of the game's seasons' boards are rebuilt (the others' keys are left alone)."""
        return self.live_only or self.shard is not None


def _scope(*, game: Game, chosen: list[BoardKind], live_only: bool, shard: int | None) -> _Scope:
    seasons = [s for s in seasons_of(game=game) if not (live_only and s.frozen_at is not None)]
    if shard is not None:  # shard k exists in the seasons split more than k ways
        seasons = [s for s in seasons if s.board_shards > shard]
    return _Scope(
        chosen=chosen,
        partial={kind.name for kind in chosen} != set(KINDS) or shard is not None,
        dense=needs_distinct_points(game.tie_rule),
        codecs={s.id: ScoreCodec(s.time_bits) for s in seasons},
        shards={s.id: s.board_shards for s in seasons},
        live_only=live_only,
        shard=shard,
    )


def _boards_stage(
    *, game: Game, scope: _Scope, started: datetime, progress: Progress | None, lock: HeldLock, report: RebuildReport
) -> dict[str, StagedBoard]:
    """Phase 1: every board of the scope into its staged copy, while the boards keep updating; then
    the names, hidden set and friends. The dense rule's companions are written from each board's
    points in display order, so only then is the ledger asked to sort. Raises LockLost as soon as
    Redis loses the rebuild lock (and the staged copies with it)."""

    def written(members: int) -> None:
        if lock.lost.is_set():  # Redis lost the lock, and the staged copies with it
            raise LockLost(lock.name)
        if progress is not None:
            progress(members)

    with BoardStager(
        game=game.slug,
        dense=scope.dense,
        codecs=scope.codecs,
        shards=scope.shards,
        only_shard=scope.shard,
        progress=written,
    ) as stager:
        for season_id in scope.codecs:  # a season at a time: the ledger reads it in player order
            extras = ledger_has_extra_boards(game=game, season_id=season_id)
            for kind in scope.chosen:
                with ledger_entries(
                    game=game, kinds=[kind], season_id=season_id, ordered=scope.dense, live_at=started, extras=extras
                ) as chunks:
                    for rows in chunks:
                        stager.write(rows)
        staged = stager.finish(now=started)
    report.boards = len(staged)
    report.members = stager.members
    names_rebuild(game=game)
    hidden_rebuild(game=game)
    friends_rebuild(game=game)
    return staged


@dataclass(frozen=True, slots=True)
class _Moved:
    """What phase 2 read in one snapshot of the ledger: who moved since phase 1 began, and the
    accepted events not applied yet."""

    now: datetime
    touched: set[str]  # the players to recompute
    pending: list[tuple[int, str, datetime, int]]  # unapplied: id, player, accepted_at, season id
    slots: EventSlots  # where each one's marker lies ("" on one Redis)
    waiting: list[int]  # (a partial rebuild) unapplied and unmarked: left out, for the worker
    fresh: dict[str, BoardScores]  # the touched players' boards as the ledger says they are now


def _moved_meanwhile(*, game: Game, scope: _Scope, started: datetime) -> _Moved:
    """Phase 2, the game paused: in one snapshot (REPEATABLE READ when this is the outermost
    transaction), the players who had results since phase 1 began (and a margin), their boards as
    the ledger says they are now, and the unapplied events. A partial rebuild asks Redis which of
    those the worker has marked already: the others are left out of its boards (and their players
    recomputed), since the worker will apply them to every board."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:  # one snapshot for the recompute and the marks
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        now = timezone.now()
        touched = players_touched_since(game=game, since=started - timedelta(seconds=TOUCHED_MARGIN_S))
        pending = unapplied_events(game=game, season_ids=list(scope.codecs) if scope.live_only else None)
        slots = EventSlots()
        waiting: list[int] = []
        if scope.partial:  # the worker will apply these to every board, the rebuilt ones included
            marked = dedup_marked(
                events=[
                    MarkedEvent(event_id, accepted_at, slots.of(season_id=season_id, player_id=player))
                    for event_id, player, accepted_at, season_id in pending
                ]
            )
            waiting = [event_id for event_id, *_ in pending if event_id not in marked]
            touched |= {player for event_id, player, *_ in pending if event_id not in marked}
        fresh = (
            ledger_boards(game=game, player_ids=touched, kinds=scope.chosen, exclude_event_ids=waiting or None)
            if touched
            else {}
        )
        if scope.some_seasons:
            fresh = {key: board for key, board in fresh.items() if board.ref.season_id in scope.codecs}
        if scope.shard is not None:
            fresh = {key: board for key, board in fresh.items() if board.ref.shard == scope.shard}
    return _Moved(now=now, touched=touched, pending=pending, slots=slots, waiting=waiting, fresh=fresh)


def _boards_swap_in(
    *, game: Game, scope: _Scope, staged: dict[str, StagedBoard], moved: _Moved, report: RebuildReport
) -> None:
    """The staged copies renamed over the live boards in one MULTI (`boards_swap`), which also sets
    the dedup markers of the unapplied events the new boards hold (a full rebuild only); then they
    leave the outbox. A partial rebuild marks nothing: those events are left to the worker."""
    applied = (
        []
        if scope.partial
        else [
            MarkedEvent(event_id, accepted_at, moved.slots.of(season_id=season_id, player_id=player))
            for event_id, player, accepted_at, season_id in moved.pending
        ]
    )
    report.removed_keys = boards_swap(
        game=game.slug,
        board_keys=set(staged),
        dense=scope.dense,
        kinds=report.kinds if scope.partial else None,
        season_ids=set(scope.codecs) if scope.some_seasons else None,
        shard=scope.shard,
        applied_events=applied,
        dedup_ttl_s=settings.SCORING_DEDUP_TTL_S,
    )
    if scope.partial:
        report.left_to_the_worker = len(moved.waiting)
    else:
        report.marked_applied = _flag_applied([event.event_id for event in applied])


def _flag_applied(event_ids: list[int]) -> int:
    """The swapped-in boards hold these events and their dedup markers are set (in the swap's
    MULTI): take them out of the outbox (recorded as applied now). Should this fail (PostgreSQL
    gone), the worker finds them there, its script skips them for their markers, and it takes them
    out."""
    return outbox_applied(event_ids)
