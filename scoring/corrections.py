"""Corrections: a player's boards re-derived from the ledger and written as absolute values.

ZADD GT and increments cannot lower a score, so revocations go this way: recompute the player's
entry on every affected board from the accepted events that remain, then write it (or remove the
member) in one Lua call that also sets the dedup markers of the events the new values include, so
a queued apply of one of them cannot count it again (`boards.writer.player_scores_write`). The
player's row is locked for the duration (one correction per player at a time, however many
moderators).
"""

import time
from collections.abc import Iterable
from datetime import date, datetime

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from boards.keys import BoardRef, MarkedEvent
from boards.kinds import KINDS
from boards.services import player_lock
from boards.tally import BoardScores
from boards.writer import GamePaused, ScoreWrite, boards_for, player_scores_write
from seasons.models import Game, Season
from seasons.selectors import seasons_by_id

from .models import EventStatus, ScoreEvent
from .selectors import ledger_boards, player_results

CorrectionPaused = GamePaused


def player_correct(*, game: Game, player_id: str, extra_regions: Iterable[str] = ()) -> int:
    """Re-derive `player_id`'s entries on every board they have (or had) events on, and on the
    boards of `extra_regions` (a region they were moved out of). Returns the number of boards
    changed. Locks the player row. Per season, one Lua call: the move between regions is atomic.
    Raises GamePaused while a rebuild swaps the game's keys."""
    with transaction.atomic():
        player_lock(game=game, player_id=player_id)
        events = list(
            player_results(game=game, player_id=player_id).values_list(
                "season_id", "day", "region", "status", "unapplied", "id", "extra_boards", "accepted_at"
            )
        )  # "unapplied": the event's outbox row (its id), None once applied
        expected = ledger_boards(game=game, player_ids=[player_id])
        seasons = seasons_by_id(season_ids={e[0] for e in events} | {b.ref.season_id for b in expected.values()})
        included = [
            (e[0], MarkedEvent(e[5], e[7])) for e in events if e[3] == EventStatus.ACCEPTED and e[4] is not None
        ]
        keys: dict[int, set[str]] = {}
        for season_id, day, region, *_, extra, _accepted_at in events:
            shards = seasons[season_id].board_shards
            for reg in {region, *extra_regions}:
                sums, bests = boards_for(
                    game=game.slug, season_id=season_id, day=_as_date(day), region=reg, extra=tuple(extra or ())
                )
                keys.setdefault(season_id, set()).update(b.for_player(player_id, shards).key for b in sums + bests)
        for board in expected.values():
            keys.setdefault(board.ref.season_id, set()).add(board.ref.key)
        changed = 0
        now = timezone.now()
        for season_id, season_keys in keys.items():
            writes = [_write_for(key, expected.get(key), player_id, now) for key in sorted(season_keys)]
            changed += player_scores_write(
                game=game,
                season=seasons[season_id],
                player_id=player_id,
                writes=writes,
                # Each with its own season's writes: on a cluster a marker lies in its season's slot.
                included_events=[event for event_season, event in included if event_season == season_id],
                dedup_ttl_s=settings.SCORING_DEDUP_TTL_S,
            )
    return changed


def player_boards_rewrite(
    *, game: Game, player_id: str, board_keys: Iterable[str], board_last: dict[str, datetime] | None = None
) -> int:
    """Rewrite `player_id`'s entries on `board_keys` from the ledger: what the reconciliation found
    different (`scoring.reconcile`); the player's other boards are left alone. As `player_correct`
    does: the player's row is locked, and one Lua call per season writes absolute values (or
    removes the player) with the dedup markers of the results they include, so a queued apply
    cannot count one twice. A result accepted but not applied yet is included, and then every
    board it lands on is rewritten too (its marker stops its apply on all of them). The values and
    those results come from one snapshot (REPEATABLE READ when this is the outermost transaction).
    `board_last` gives a board's last write, for the lifetime of a board this recreates.
    Returns the number of boards changed; raises GamePaused while a rebuild swaps the game's keys,
    and OperationalError when the player's row changed under the snapshot (try again later)."""
    by_season: dict[int, set[str]] = {}
    for key in board_keys:
        by_season.setdefault(BoardRef.from_key(key).season_id, set()).add(key)
    changed = 0
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        player_lock(game=game, player_id=player_id)
        included = list(
            ScoreEvent.objects.filter(
                game=game,
                season_id__in=list(by_season),
                player_id=player_id,
                status=EventStatus.ACCEPTED,
                unapplied__isnull=False,
            ).values_list("id", "season_id", "day", "region", "extra_boards", "accepted_at")
        )
        seasons = seasons_by_id(season_ids=by_season)
        for _, season_id, day, region, extra, _accepted_at in included:
            by_season[season_id].update(
                _player_board_keys(
                    game=game, season=seasons[season_id], player_id=player_id, day=day, region=region, extra=extra
                )
            )
        expected: dict[str, BoardScores] = {}
        for season_id in by_season:
            expected.update(ledger_boards(game=game, player_ids=[player_id], season_id=season_id))
        now = timezone.now()
        for season_id, season_keys in by_season.items():
            changed += player_scores_write(
                game=game,
                season=seasons[season_id],
                player_id=player_id,
                writes=_rewrites(season_keys, expected=expected, player_id=player_id, now=now, board_last=board_last),
                included_events=[MarkedEvent(e[0], e[5]) for e in included if e[1] == season_id],
                dedup_ttl_s=settings.SCORING_DEDUP_TTL_S,
            )
    return changed


def _player_board_keys(
    *, game: Game, season: Season, player_id: str, day: date | str, region: str | None, extra: list[str] | None
) -> list[str]:
    """The keys of the boards one result of `player_id` lands on (`boards_for`, in the player's shard)."""
    sums, bests = boards_for(
        game=game.slug, season_id=season.id, day=_as_date(day), region=region, extra=tuple(extra or ())
    )
    return [b.for_player(player_id, season.board_shards).key for b in sums + bests]


def _rewrites(
    season_keys: set[str],
    *,
    expected: dict[str, BoardScores],
    player_id: str,
    now: datetime,
    board_last: dict[str, datetime] | None,
) -> list[ScoreWrite]:
    """The player's value on each board of one season (`_write_for`), in key order; a board this
    recreates lives as long as its last write (`board_last`) still gives it."""
    writes = []
    for key in sorted(season_keys):
        write = _write_for(key, expected.get(key), player_id, now)
        last = (board_last or {}).get(key)
        if write.score is not None and last is not None:
            ttl = KINDS[BoardRef.from_key(key).board].ttl_left_s(last, now)
            write = ScoreWrite(key=key, score=write.score, ttl_s=max(write.ttl_s, ttl or 0))
        writes.append(write)
    return writes


def player_correct_retrying(*, game: Game, player_id: str, attempts: int = 50) -> int:
    """`player_correct`, waiting out a rebuild's swap (it takes a moment)."""
    for _ in range(attempts):
        try:
            return player_correct(game=game, player_id=player_id)
        except GamePaused:
            time.sleep(0.2)
    raise GamePaused(game.slug)


def _write_for(key: str, board: BoardScores | None, player_id: str, now: datetime) -> ScoreWrite:
    score = board.scores.get(player_id) if board is not None else None
    ttl = board.ttl_left_s(now) if board is not None else None
    if ttl is not None and ttl <= 0:
        score = None  # a day or week board past its TTL stays gone
    return ScoreWrite(key=key, score=score, ttl_s=ttl or 0)


def _as_date(value: date | str) -> date:
    return value if isinstance(value, date) else date.fromisoformat(value)
