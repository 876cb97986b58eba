"""Reads of the ledger: what every board must hold, derived from accepted events alone.

`ledger_boards` is the truth that `rebuild_boards` writes, that corrections and the freeze take,
and that the consistency checks compare the live boards against, member by member. PostgreSQL
sums each player's results per (season, region, dimensions, day); the scoring rule itself
(`boards.tally.Tally`) folds those into each board kind, the same rule the Lua writer applies.
"""

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.db import connection
from django.db.models import Min

from boards.codec import ScoreCodec, reached_seconds
from boards.keys import GLOBAL, BoardRef, board_pattern, is_board_key
from boards.kinds import KINDS
from boards.selectors import BoardView, board_ranks, frozen_own_rank, hidden_players_sql, player_hidden
from boards.tally import BoardScores, Tally
from common.redis import client
from seasons.models import Game
from seasons.selectors import seasons_of

from .models import EventStatus, ScoreEvent

_TABLE = ScoreEvent._meta.db_table


def json_list(value: Any) -> list[str]:
    """A jsonb list from a raw cursor (Django's psycopg setup hands jsonb over as text)."""
    if isinstance(value, str):
        value = json.loads(value)
    return list(value or [])


def _sql(
    game_id: int, player_ids: Iterable[str] | None, season_id: int | None, include_hidden: bool
) -> tuple[str, list[Any]]:
    where = "game_id = %s AND status = %s"
    params: list[Any] = [game_id, EventStatus.ACCEPTED.value]
    if not include_hidden:  # hidden and deleted players are on no public board
        hidden_sql, hidden_params = hidden_players_sql(game_id=game_id)
        where += f" AND player_id NOT IN ({hidden_sql})"
        params += hidden_params
    if season_id is not None:
        where += " AND season_id = %s"
        params.append(season_id)
    if player_ids is not None:
        where += " AND player_id = ANY(%s)"
        params.append(list(player_ids))
    # Per group: the sum, the latest positive and the earliest accept time, the best and the lowest
    # result each with the earliest time it was scored, and the last write.
    sql = (
        "SELECT season_id, player_id, region, extra_boards, day, SUM(points), "
        "MAX(accepted_at) FILTER (WHERE points > 0), MIN(accepted_at), "
        "MAX(points), (array_agg(accepted_at ORDER BY points DESC, accepted_at))[1], "
        "MIN(points), (array_agg(accepted_at ORDER BY points ASC, accepted_at))[1], MAX(accepted_at) "
        f"FROM {_TABLE} WHERE {where} GROUP BY season_id, player_id, region, extra_boards, day"
    )
    return sql, params


def ledger_boards(
    *,
    game: Game,
    player_ids: Iterable[str] | None = None,
    season_id: int | None = None,
    include_hidden: bool = False,
) -> dict[str, BoardScores]:
    """Every board of the game as the ledger says it must be: key -> members and encoded scores.

    With `player_ids`, only those players' entries (for a targeted recompute); with `season_id`,
    only that season's boards; with `include_hidden`, hidden players too (their own rank).
    """
    seasons = {s.id: s for s in seasons_of(game=game)}
    tallies: dict[tuple[str, str], Tally] = {}  # (board key, player) -> tally
    refs: dict[str, tuple[BoardRef, datetime]] = {}  # board key -> (ref, last write)

    sql, params = _sql(game.id, player_ids, season_id, include_hidden)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(10_000):
            for sid, player, region, extra, day, total, last_pos, first, best, best_at, low, low_at, last in rows:
                start = seasons[sid].starts_at

                def at(moment: datetime | None, start: datetime = start) -> int | None:
                    return None if moment is None else reached_seconds(season_start=start, accepted_at=moment)

                group = Tally(
                    points=int(total),
                    last_positive_s=at(last_pos),
                    first_s=reached_seconds(season_start=start, accepted_at=first),
                    best=int(best),
                    best_s=reached_seconds(season_start=start, accepted_at=best_at),
                    low=int(low),
                    low_s=reached_seconds(season_start=start, accepted_at=low_at),
                )
                regions = [GLOBAL] + ([region] if region else [])
                regions += [e for e in json_list(extra) if e not in regions]
                played_day = day if isinstance(day, date) else date.fromisoformat(str(day))
                for reg in regions:
                    for kind in KINDS.values():
                        ref = BoardRef(game.slug, sid, kind.name, reg, kind.period_of(played_day))
                        found = tallies.get((ref.key, player))
                        if found is None:
                            tallies[(ref.key, player)] = group.copy()
                        else:
                            found.merge(group)
                        seen = refs.get(ref.key)
                        if seen is None or seen[1] < last:
                            refs[ref.key] = (ref, last)

    boards: dict[str, BoardScores] = {
        key: BoardScores(ref=ref, scores={}, last_write=last) for key, (ref, last) in refs.items()
    }
    for (key, player), tally in tallies.items():
        board = boards[key]
        codec = ScoreCodec(seasons[board.ref.season_id].time_bits)
        board.scores[player] = tally.score(codec, best=KINDS[board.ref.board].best, ascending=game.ascending)
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
    redis = client()
    expected = {key: board for key, board in ledger_boards(game=game).items() if not board.expired(now)}
    live_keys = {str(k) for k in redis.scan_iter(match=board_pattern(game.slug), count=1000) if is_board_key(str(k))}
    diff: dict[str, dict[str, tuple[int | None, int | None]]] = defaultdict(dict)
    for key in live_keys | set(expected):
        pairs: list[Any] = redis.zrange(key, 0, -1, withscores=True)  # [(member, score)]
        live = {str(m): int(float(s)) for m, s in pairs}
        want = expected[key].scores if key in expected else {}
        for player in live.keys() | want.keys():
            if live.get(player) != want.get(player):
                diff[key][player] = (live.get(player), want.get(player))
    return dict(diff)


@dataclass(frozen=True)
class OwnRank:
    player_id: str
    score: int
    rank: int
    hidden: bool


def player_own_rank(*, view: BoardView, player_id: str) -> OwnRank | None:
    """A player's own score and rank, hidden or not, counted as if visible (what their profile
    page shows them): from the ledger for a live season, from the standings for a frozen one."""
    found: tuple[int, int] | None
    if view.frozen:
        found = frozen_own_rank(view=view, player_id=player_id)
    else:
        board = ledger_boards(
            game=view.game, player_ids=[player_id], season_id=view.season.id, include_hidden=True
        ).get(view.ref.key)
        if board is None or player_id not in board.scores:
            return None
        score = board.scores[player_id]
        [rank] = board_ranks(view=view, members=[(player_id, score)])
        found = (view.shown(view.codec.points(score)), rank)
    if found is None:
        return None
    return OwnRank(player_id, found[0], found[1], player_hidden(game=view.game, player_id=player_id))


def queue_lag_s(*, now: datetime) -> float:
    """Age in seconds of the oldest accepted result not yet on the boards (0 when none)."""
    oldest = ScoreEvent.objects.filter(status=EventStatus.ACCEPTED, applied_at__isnull=True).aggregate(
        oldest=Min("accepted_at")
    )["oldest"]
    return max(0.0, (now - oldest).total_seconds()) if oldest else 0.0
