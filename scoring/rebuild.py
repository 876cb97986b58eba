"""Rebuild every live board of a game from the ledger, into fresh keys, then swap them in.

Phase 1 (boards keep updating): compute each board from the ledger and write it under
`<key>:rebuild`. Phase 2 (the game's apply is paused, a few hundred ms): in one snapshot of the
ledger, recompute the players who had results since phase 1 began, mark every accepted but
unapplied event as applied (dedup marker and `applied_at`, since the new boards hold it), then
rename the new keys over the live ones. Events that arrive during phase 2 wait (the apply script
answers "paused") and are applied to the new boards by the relay afterwards: none is lost and
none counts twice.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from seasons.models import Game, TieRule

from . import redis_boards
from .encoding import ScoreCodec
from .models import EventStatus, ScoreEvent
from .selectors import LedgerBoard, ledger_boards, players_touched_since, unapplied_ids

logger = logging.getLogger(__name__)

REBUILD_SUFFIX = ":rebuild"
PAUSE_TTL_S = 120
WRITE_CHUNK = 5000
# Results accepted this long before phase 1 began are recomputed again in phase 2 (covers
# transactions that took their accept time before phase 1 but committed after it).
TOUCHED_MARGIN_S = 60

Progress = Callable[[int], None]


@dataclass
class RebuildReport:
    boards: int = 0
    members: int = 0
    recomputed_players: int = 0
    marked_applied: int = 0
    removed_keys: int = 0


def _distinct(board: LedgerBoard, time_bits: int) -> dict[str, int]:
    codec = ScoreCodec(time_bits)
    points = {codec.points(score) for score in board.scores.values()}
    return {str(p): p for p in points}


def boards_rebuild(*, game: Game, progress: Progress | None = None, on_total: Progress | None = None) -> RebuildReport:
    """Rebuild all live boards of `game` from the ledger (see the module docstring)."""
    client = redis_boards.client()
    dense = game.tie_rule == TieRule.DENSE
    report = RebuildReport()
    started = timezone.now()
    seasons = {s.id: s for s in game.seasons.all()}

    def live(boards: dict[str, LedgerBoard], now: datetime) -> dict[str, LedgerBoard]:
        return {k: b for k, b in boards.items() if (b.ttl_left_s(now) or 1) > 0}

    # Phase 1: everything, while the boards keep updating.
    boards = live(ledger_boards(game=game), started)
    if on_total:
        on_total(sum(len(b.scores) for b in boards.values()))
    pipe = client.pipeline(transaction=False)
    for board in boards.values():
        _write_companion_and_board(
            pipe, board, dense=dense, time_bits=seasons[board.ref.season_id].time_bits, now=started, progress=progress
        )
        pipe.execute()
    report.boards = len(boards)
    report.members = sum(len(b.scores) for b in boards.values())
    _names_rebuild(game)
    _hidden_rebuild(game)

    # Phase 2: paused; recompute who moved, mark the unapplied as applied, swap.
    client.set(redis_boards.pause_key(game.slug), "rebuild", ex=PAUSE_TTL_S)
    try:
        outermost = not connection.in_atomic_block
        with transaction.atomic():
            if outermost:  # one snapshot for the recompute and the marks
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            now = timezone.now()
            touched = players_touched_since(game=game, since=started - timedelta(seconds=TOUCHED_MARGIN_S))
            fresh = live(ledger_boards(game=game, player_ids=touched), now) if touched else {}
            pending = unapplied_ids(game=game)
        report.recomputed_players = len(touched)
        pipe = client.pipeline(transaction=False)
        for key, board in boards.items():
            for player in touched:
                if player in board.scores and (key not in fresh or player not in fresh[key].scores):
                    pipe.zrem(key + REBUILD_SUFFIX, player)
                    del board.scores[player]
        for key, board in fresh.items():
            if key not in boards:
                boards[key] = LedgerBoard(ref=board.ref, scores={}, last_write=board.last_write)
            boards[key].scores.update(board.scores)
            boards[key].last_write = max(boards[key].last_write, board.last_write)
            pipe.zadd(key + REBUILD_SUFFIX, board.scores)
            ttl = boards[key].ttl_left_s(now)
            if ttl is not None:
                pipe.expire(key + REBUILD_SUFFIX, max(ttl, 1))
        if dense:
            for key in fresh:
                board = boards[key]
                companion = redis_boards.distinct_key(key + REBUILD_SUFFIX)
                pipe.delete(companion)
                pipe.zadd(companion, _distinct(board, seasons[board.ref.season_id].time_bits))
        pipe.execute()
        report.marked_applied = _mark_applied(pending)
        report.removed_keys = _swap(client, game, set(boards), dense=dense)
    finally:
        client.delete(redis_boards.pause_key(game.slug))
    logger.info("rebuild of %s: %s", game.slug, report)
    return report


def _write_companion_and_board(
    pipe, board: LedgerBoard, *, dense: bool, time_bits: int, now: datetime, progress: Progress | None
) -> None:
    key = board.ref.key + REBUILD_SUFFIX
    companion = redis_boards.distinct_key(key)
    pipe.delete(key, companion)
    items = list(board.scores.items())
    for start in range(0, len(items), WRITE_CHUNK):
        pipe.zadd(key, dict(items[start : start + WRITE_CHUNK]))
        if progress:
            progress(min(WRITE_CHUNK, len(items) - start))
    if dense and items:
        pipe.zadd(companion, _distinct(board, time_bits))
    ttl = board.ttl_left_s(now)
    if ttl is not None:
        pipe.expire(key, max(ttl, 1))
        if dense:
            pipe.expire(companion, max(ttl, 1))


def _mark_applied(event_ids: list[int]) -> int:
    """The rebuilt boards hold these events: set their dedup markers, then their applied flag."""
    if not event_ids:
        return 0
    client = redis_boards.client()
    pipe = client.pipeline(transaction=False)
    for event_id in event_ids:
        key, field = redis_boards.dedup_location(event_id)
        pipe.hset(key, field, "1")
        pipe.expire(key, settings.SCORING_DEDUP_TTL_S)
    pipe.execute()
    return ScoreEvent.objects.filter(id__in=event_ids, status=EventStatus.ACCEPTED, applied_at__isnull=True).update(
        applied_at=timezone.now()
    )


def _swap(client, game: Game, keys: set[str], *, dense: bool) -> int:
    """Rename every rebuilt key over its live key; drop live boards the ledger no longer has.

    The old values are unlinked (freed in the background), so a 1M-member board does not block.
    """
    existing = {
        k
        for k in client.scan_iter(match=redis_boards.board_pattern(game.slug), count=1000)
        if not k.endswith(REBUILD_SUFFIX) and not k.endswith(REBUILD_SUFFIX + ":d")
    }
    pipe = client.pipeline(transaction=True)
    old_keys = []
    for key in keys:
        for name in [key, redis_boards.distinct_key(key)] if dense else [key]:
            if name in existing:
                pipe.rename(name, name + ":old")
                old_keys.append(name + ":old")
    for key in keys:
        pipe.rename(key + REBUILD_SUFFIX, key)
        if dense:
            companion = redis_boards.distinct_key(key + REBUILD_SUFFIX)
            pipe.rename(companion, redis_boards.distinct_key(key))
    stale = [k for k in existing if k not in keys and not (k.endswith(":d") and k[:-2] in keys)]
    pipe.execute()
    garbage = old_keys + stale
    if garbage:
        client.unlink(*garbage)
    return len(stale)


def _names_rebuild(game: Game) -> None:
    from boards.models import Player

    names = Player.objects.filter(game=game, display_name__isnull=False).values_list("player_id", "display_name")
    batch: dict[str, str] = {}
    for player_id, name in names.iterator(chunk_size=10_000):
        batch[player_id] = name or ""
        if len(batch) >= WRITE_CHUNK:
            redis_boards.names_store(game.slug, batch)
            batch = {}
    redis_boards.names_store(game.slug, batch)


def _hidden_rebuild(game: Game) -> None:
    from boards.models import Player

    client = redis_boards.client()
    hidden = list(
        Player.objects.filter(game=game)
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .values_list("player_id", flat=True)
    )
    pipe = client.pipeline(transaction=True)
    pipe.delete(redis_boards.hidden_key(game.slug))
    if hidden:
        pipe.sadd(redis_boards.hidden_key(game.slug), *hidden)
    pipe.execute()
