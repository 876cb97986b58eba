"""Reads of the ledger: what every board must hold, derived from accepted events alone.

`ledger_boards` is the truth that `rebuild_boards` writes and that the consistency checks compare
the live boards against, member by member. It applies the same rules as the Lua writer: sums for
season/day/week boards, the best single match for `best`; "reached" is the latest accept time
of a positive result (or the earliest while all are zero); for `best`, the earliest accept time
of the best result.
"""

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.db import connection

from boards.models import Player
from seasons.models import Game, Season

from . import redis_boards
from .encoding import ScoreCodec, reached_seconds
from .models import EventStatus, ScoreEvent


@dataclass
class Aggregate:
    points: int
    last_positive: datetime | None
    first: datetime
    best: int
    best_at: datetime
    last_write: datetime
    low: int = 0
    low_at: datetime | None = None

    def merge(self, other: "Aggregate") -> None:
        self.points += other.points
        if other.last_positive is not None and (self.last_positive is None or other.last_positive > self.last_positive):
            self.last_positive = other.last_positive
        self.first = min(self.first, other.first)
        if other.best > self.best or (other.best == self.best and other.best_at < self.best_at):
            self.best, self.best_at = other.best, other.best_at
        if other.low_at is not None and (
            self.low_at is None or other.low < self.low or (other.low == self.low and other.low_at < self.low_at)
        ):
            self.low, self.low_at = other.low, other.low_at
        self.last_write = max(self.last_write, other.last_write)


@dataclass
class LedgerBoard:
    ref: redis_boards.BoardRef
    scores: dict[str, int]
    last_write: datetime

    def ttl_left_s(self, now: datetime) -> int | None:
        """Seconds the board should still live (day and week boards), None for no expiry."""
        ttl = redis_boards.board_ttl_s(self.ref.board)
        if ttl == 0:
            return None
        return int(ttl - (now - self.last_write).total_seconds())


def _sql(
    game_id: int, player_ids: Iterable[str] | None, season_id: int | None = None, include_hidden: bool = False
) -> tuple[str, list[Any]]:
    table = ScoreEvent._meta.db_table
    where = "game_id = %s AND status = %s"
    params: list[Any] = [game_id, EventStatus.ACCEPTED.value]
    if not include_hidden:  # hidden and deleted players are on no public board
        players = Player._meta.db_table
        where += (
            f" AND player_id NOT IN (SELECT player_id FROM {players} WHERE game_id = %s"
            " AND (hidden OR deleted_at IS NOT NULL))"
        )
        params.append(game_id)
    if season_id is not None:
        where += " AND season_id = %s"
        params.append(season_id)
    if player_ids is not None:
        where += " AND player_id = ANY(%s)"
        params.append(list(player_ids))
    sql = (
        "SELECT season_id, player_id, region, extra_boards, day, week, SUM(points), "
        "MAX(accepted_at) FILTER (WHERE points > 0), MIN(accepted_at), MAX(points), "
        "(array_agg(accepted_at ORDER BY points DESC, accepted_at))[1], MAX(accepted_at), "
        "MIN(points), (array_agg(accepted_at ORDER BY points ASC, accepted_at))[1] "
        f"FROM {table} WHERE {where} GROUP BY season_id, player_id, region, extra_boards, day, week"
    )
    return sql, params


def json_list(value: Any) -> list[str]:
    """A jsonb list from a raw cursor (Django's psycopg setup hands jsonb over as text)."""
    if isinstance(value, str):
        value = json.loads(value)
    return list(value or [])


def ledger_boards(
    *,
    game: Game,
    player_ids: Iterable[str] | None = None,
    season_id: int | None = None,
    include_hidden: bool = False,
) -> dict[str, LedgerBoard]:
    """Every board of the game as the ledger says it must be: key -> members and encoded scores.

    With `player_ids`, only those players' entries (for a targeted recompute); with `season_id`,
    only that season's boards.
    """
    seasons = {s.id: s for s in Season.objects.filter(game=game)}
    # (season, board, region, period, player) -> aggregate
    acc: dict[tuple[int, str, str, str, str], Aggregate] = {}

    def add(key: tuple[int, str, str, str, str], agg: Aggregate) -> None:
        found = acc.get(key)
        if found is None:
            acc[key] = Aggregate(**agg.__dict__)
        else:
            found.merge(agg)

    sql, params = _sql(game.id, player_ids, season_id, include_hidden)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while True:
            rows = cursor.fetchmany(10_000)
            if not rows:
                break
            for season_id, player, region, extra, day, week, total, last_pos, first, best, best_at, last, *lows in rows:
                agg = Aggregate(int(total), last_pos, first, int(best), best_at, last, int(lows[0]), lows[1])
                regions = [redis_boards.GLOBAL] + ([region] if region else [])
                regions += [e for e in json_list(extra) if e not in regions]
                period_day = day.isoformat() if isinstance(day, date) else str(day)
                for reg in regions:
                    add((season_id, "all", reg, redis_boards.NO_PERIOD, player), agg)
                    add((season_id, "best", reg, redis_boards.NO_PERIOD, player), agg)
                    add((season_id, "daily", reg, period_day, player), agg)
                    add((season_id, "weekly", reg, week, player), agg)
                    add((season_id, "monthly", reg, period_day[:7], player), agg)

    boards: dict[str, LedgerBoard] = {}
    for (season_id, board, region, period, player), agg in acc.items():
        season = seasons[season_id]
        codec = ScoreCodec(season.time_bits)
        ref = redis_boards.BoardRef(game.slug, season_id, board, region, period)
        if game.ascending:  # every board: the lowest value of the window, stored inverted
            assert agg.low_at is not None
            score = codec.encode(
                points=codec.stored_points(agg.low, ascending=True),
                reached_s=reached_seconds(season_start=season.starts_at, accepted_at=agg.low_at),
            )
        elif board == "best":
            score = codec.encode(
                points=agg.best, reached_s=reached_seconds(season_start=season.starts_at, accepted_at=agg.best_at)
            )
        else:
            reached_at = agg.last_positive if agg.points > 0 and agg.last_positive is not None else agg.first
            score = codec.encode(
                points=agg.points, reached_s=reached_seconds(season_start=season.starts_at, accepted_at=reached_at)
            )
        entry = boards.get(ref.key)
        if entry is None:
            entry = boards[ref.key] = LedgerBoard(ref=ref, scores={}, last_write=agg.last_write)
        entry.scores[player] = score
        entry.last_write = max(entry.last_write, agg.last_write)
    return boards


def unapplied_ids(*, game: Game) -> list[int]:
    return list(
        ScoreEvent.objects.filter(game=game, status=EventStatus.ACCEPTED, applied_at__isnull=True).values_list(
            "id", flat=True
        )
    )


def players_touched_since(*, game: Game, since: datetime) -> set[str]:
    return set(
        ScoreEvent.objects.filter(game=game, accepted_at__gte=since).values_list("player_id", flat=True).distinct()
    )


def boards_diff(*, game: Game, now: datetime) -> dict[str, dict[str, tuple[int | None, int | None]]]:
    """Live boards against the ledger: {key: {player: (redis score, ledger score)}} where they differ.

    Day and week boards whose TTL has run out are expected to be gone."""
    client = redis_boards.client()
    expected = {key: board for key, board in ledger_boards(game=game).items() if (board.ttl_left_s(now) or 1) > 0}
    live_keys = {
        str(k)
        for k in client.scan_iter(match=redis_boards.board_pattern(game.slug), count=1000)
        if not str(k).endswith((":d", ":rebuild"))
    }
    diff: dict[str, dict[str, tuple[int | None, int | None]]] = defaultdict(dict)
    for key in live_keys | set(expected):
        pairs: list[Any] = client.zrange(key, 0, -1, withscores=True)  # [(member, score)]
        live = {str(m): int(float(s)) for m, s in pairs}
        want = expected[key].scores if key in expected else {}
        for player in live.keys() | want.keys():
            if live.get(player) != want.get(player):
                diff[key][player] = (live.get(player), want.get(player))
    return dict(diff)
