"""Reads of the ledger: what every board must hold, derived from accepted events alone.

The ledger's boards are the truth that `rebuild_boards` writes, that the freeze stores, that
corrections write back and that the consistency checks compare the live boards against, member by
member. The scoring rule for them is stated here once, in SQL (`_kind_sql`): per board kind, each
accepted result is placed on every region board it counts on (global, its region, its extra
dimensions), grouped by (season, region, period, player), and folded into the encoded score the
Lua writer keeps (boards/codec.py: points in the high bits, the inverted "reached" second in the
low bits) - the same rule as lua/apply_events.lua and `boards.tally.Tally` (its docstring says
who states it where; the tests hold the three to each other).

`ledger_entries` streams the result through a server-side cursor, chunk by chunk: a season of
millions of players is rebuilt or frozen in memory that does not grow with it (one kind per query,
so PostgreSQL sorts and hashes one kind's groups at a time). `ledger_boards` gathers the same rows
into dicts, for the few players of a correction, a recompute or a test.
"""

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from django.db import connection, transaction
from django.db.models import Min, QuerySet

from boards.codec import EXACT_BITS, ScoreOverflow
from boards.keys import GLOBAL, BoardRef, board_pattern, is_board_key
from boards.kinds import KINDS, BoardKind
from boards.selectors import BoardView, board_ranks, frozen_own_rank, hidden_players_sql, player_hidden
from boards.tally import BoardEntry, BoardScores, moment_of
from common.redis import boards_client
from seasons.models import Game, Season
from seasons.selectors import season_shards, seasons_of

from .ledger_partitions import played_floor, played_window
from .models import EventStatus, ScoreEvent, UnappliedEvent

_TABLE = ScoreEvent._meta.db_table
_SEASONS = Season._meta.db_table

STREAM_CHUNK = 20_000  # rows handed over at a time
STREAM_BATCH = 1000  # rows per message while the server pushes them (psycopg's chunked rows mode)
# What PostgreSQL may use per sort or hash of one query before it spills to disk: a kind of a
# 1M-player season is ~2M groups; more memory than this buys little (measured: 64 MB and 256 MB
# within 10%), and the job then leaves the server's memory alone.
JOB_WORK_MEM = "64MB"


def json_list(value: Any) -> list[str]:
    """A jsonb list from a raw cursor (Django's psycopg setup hands jsonb over as text)."""
    if isinstance(value, str):
        value = json.loads(value)
    return list(value or [])


# The codec (boards/codec.py) in SQL, over the season `s` of each group: span = 2**time_bits,
# reached seconds from the season's start clamped to [0, span - 1], capacity 2**(53 - time_bits) - 1.
_SPAN = "(1::bigint << s.time_bits)"
_MAX_REACHED = "((1::bigint << s.time_bits) - 1)"
_CAPACITY = f"((1::bigint << ({EXACT_BITS} - s.time_bits)) - 1)"


def _reached(moment: str) -> str:
    """`boards.codec.reached_seconds`, clamped as `ScoreCodec.encode` clamps it. date_part is a
    double: exact to well under a microsecond for any season's span, so the floor is exact."""
    return f"LEAST(GREATEST(FLOOR(date_part('epoch', {moment} - s.starts_at)), 0), {_MAX_REACHED})::bigint"


def _epoch_us(moment: str) -> str:
    """A timestamp as whole microseconds since the epoch, exactly (whole seconds, then the
    microseconds of the minute's seconds), without numeric arithmetic."""
    return (
        f"(FLOOR(date_part('epoch', {moment}))::bigint * 1000000 "
        f"+ mod(date_part('microseconds', {moment})::bigint, 1000000))"
    )


def _score_sql(kind: BoardKind, *, ascending: bool) -> str:
    """The encoded score of one (board, player) group: the scoring rule. NULL when it does not fit
    the season's exact capacity (the caller raises ScoreOverflow, as `ScoreCodec.encode` would)."""
    if ascending:  # every board keeps the lowest value, reached when it was first scored
        stored = f"({_CAPACITY} - ev.points) * {_SPAN} + {_MAX_REACHED} - {_reached('ev.accepted_at')}"
        return (
            f"CASE WHEN MIN(ev.points) BETWEEN 0 AND {_CAPACITY} "
            f"THEN MAX(CASE WHEN ev.points <= {_CAPACITY} THEN {stored} END) END"
        )
    if kind.best:  # the best single result, reached when it was first scored
        encoded = f"LEAST(ev.points, {_CAPACITY}) * {_SPAN} + {_MAX_REACHED} - {_reached('ev.accepted_at')}"
        return f"CASE WHEN MAX(ev.points) BETWEEN 0 AND {_CAPACITY} THEN MAX({encoded}) END"
    # Sums: reached at the latest positive result (the earliest result, while the sum is 0).
    reached_at = (
        "CASE WHEN SUM(ev.points) > 0 THEN MAX(ev.accepted_at) FILTER (WHERE ev.points > 0) "
        "ELSE MIN(ev.accepted_at) END"
    )
    return (
        f"CASE WHEN SUM(ev.points) BETWEEN 0 AND {_CAPACITY} "
        f"THEN SUM(ev.points)::bigint * {_SPAN} + {_MAX_REACHED} - {_reached(reached_at)} END"
    )


_REGION = "NULLIF(ev.region, '')"


def _kind_sql(
    kind: BoardKind,
    *,
    game: Game,
    events: tuple[str, list[Any]],
    season_id: int | None,
    extras: bool,
    live_at: datetime | None,
) -> tuple[str, list[Any]]:
    """One kind's boards over `events` (SQL selecting the accepted results wanted, and its
    parameters): a row per (season, region, period, player) in the shape of `BoardEntry`.

    A result counts on the global board, on its region's, and on its extra dimensions' boards
    (`boards.writer.boards_for` names the same boards). The global and region boards come from one
    pass over the results in player order (the (season, player) index gives it): each player's
    groups, rolled up from region to global, are complete as soon as the next player begins, so
    rows stream out while the ledger is still being read. The extra dimensions' boards (with
    `extras`) come from a second pass over the results that have any.

    With `live_at`, a periodic kind only takes periods that had a result accepted within the
    kind's lifetime before it (the others' boards have expired)."""
    events_sql, events_params = events
    period = kind.period_sql("ev.day")
    by_period = f", {period}" if kind.periodic else ""
    live, live_params = "TRUE", []
    if live_at is not None and kind.ttl_s():
        recent = "l.game_id = %s AND l.status = %s AND l.accepted_at > %s AND l.played_at >= %s AND l.played_at < %s"
        since = live_at - timedelta(seconds=kind.ttl_s())
        seasons = [s for s in seasons_of(game=game) if season_id is None or s.id == season_id]
        live_params = [game.id, EventStatus.ACCEPTED.value, since, played_floor(seasons, accepted_since=since)]
        live_params.append(played_window(seasons)[1])
        if season_id is not None:
            recent += " AND l.season_id = %s"
            live_params.append(season_id)
        # ARRAY(...) is computed once (an InitPlan), whatever the planner thinks of the row counts:
        # as a semi-join under stale statistics it was re-read for every result (minutes, not ms).
        live = f"{period} = ANY(ARRAY(SELECT DISTINCT {kind.period_sql('l.day')} FROM {_TABLE} l WHERE {recent}))"

    def select(region: str, source: str) -> str:
        return (
            f"SELECT %s, s.id, {region}, {period}, ev.player_id, {_score_sql(kind, ascending=game.ascending)}, "
            f"{_epoch_us('MAX(ev.accepted_at)')} FROM ({source}) AS ev JOIN {_SEASONS} s ON s.id = ev.season_id"
        )

    sql = (
        select(f"CASE WHEN GROUPING({_REGION}) = 1 THEN %s ELSE {_REGION} END", f"{events_sql} ORDER BY e.player_id")
        + f" WHERE {live} GROUP BY ev.player_id, s.id{by_period}, ROLLUP({_REGION})"
        + f" HAVING GROUPING({_REGION}) = 1 OR {_REGION} IS NOT NULL"
    )
    params = [kind.name, GLOBAL, *events_params, *live_params]
    if extras:
        sql += (
            " UNION ALL "
            + select("x.value", events_sql)
            + " CROSS JOIN LATERAL jsonb_array_elements_text(ev.extra_boards) AS x "
            + f"WHERE ev.extra_boards <> '[]' AND x.value <> %s AND x.value IS DISTINCT FROM {_REGION} AND {live} "
            + f"GROUP BY ev.player_id, s.id{by_period}, x.value"
        )
        params += [kind.name, *events_params, GLOBAL, *live_params]
    return sql, params


def _entries_sql(
    *,
    game: Game,
    kinds: Sequence[BoardKind],
    season_id: int | None,
    player_ids: Iterable[str] | None,
    include_hidden: bool,
    exclude_event_ids: Iterable[int] | None,
    ordered: bool,
    live_at: datetime | None,
    extras: bool,
) -> tuple[str, list[Any]]:
    where = "e.game_id = %s AND e.status = %s AND e.played_at >= %s AND e.played_at < %s"
    seasons = seasons_of(game=game)
    window = played_window(s for s in seasons if season_id is None or s.id == season_id)
    params: list[Any] = [game.id, EventStatus.ACCEPTED.value, *window]
    if season_id is not None:
        where += " AND e.season_id = %s"
        params.append(season_id)
    if player_ids is not None:
        where += " AND e.player_id = ANY(%s)"
        params.append(list(player_ids))
        if season_id is None:  # lets the (season, player) index find them
            where += " AND e.season_id = ANY(%s)"
            params.append([s.id for s in seasons])
    if not include_hidden:  # hidden and deleted players are on no public board
        hidden_sql, hidden_params = hidden_players_sql(game_id=game.id)
        where += f" AND e.player_id NOT IN ({hidden_sql})"
        params += hidden_params
    if exclude_event_ids is not None:
        where += " AND e.id <> ALL(%s)"
        params.append(list(exclude_event_ids))
    events = (
        "SELECT e.season_id, e.player_id, e.points, e.accepted_at, e.day, e.region, e.extra_boards "
        f"FROM {_TABLE} e WHERE {where}"
    )
    parts, all_params = [], []
    for kind in kinds:
        part, part_params = _kind_sql(
            kind, game=game, events=(events, params), season_id=season_id, extras=extras, live_at=live_at
        )
        parts.append(part)
        all_params += part_params
    sql = " UNION ALL ".join(parts)
    if ordered:  # board by board, each in display order: score descending, then player id by code point
        sql = (
            f"SELECT * FROM ({sql}) AS b(board, season_id, region, period, player_id, score, last_us) "
            'ORDER BY board, season_id, region, period, score DESC, player_id COLLATE "C"'
        )
    return sql, all_params


def ledger_job_settings() -> None:
    """Settings for a query of `ledger_entries_sql` over a whole season, to the end of the current
    transaction (or savepoint)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL work_mem = '{JOB_WORK_MEM}'")
        # Group the player-ordered results as they come (see `_kind_sql`): a hash aggregate
        # would hold every group of the season until the last result is read.
        cursor.execute("SET LOCAL enable_hashagg = off")
        cursor.execute("SET LOCAL jit = off")  # measured: compiling costs these queries more than it saves


def ledger_entries_sql(*, game: Game, kind: BoardKind, season_id: int, extras: bool) -> tuple[str, list[Any]]:
    """The SQL (and its parameters) selecting the public members of one kind's boards of a season, in
    no order, in the shape of `BoardEntry` (their encoded score NULL past the season's exact
    capacity): for a caller that ranks them inside PostgreSQL (the freeze). Run it after
    `ledger_job_settings`."""
    return _entries_sql(
        game=game,
        kinds=[kind],
        season_id=season_id,
        player_ids=None,
        include_hidden=False,
        exclude_event_ids=None,
        ordered=False,
        live_at=None,
        extras=extras,
    )


def ledger_has_extra_boards(*, game: Game, season_id: int) -> bool:
    """Whether any accepted result of the season counts on an extra dimension's board (the game
    may have declared its dimensions after some results, or dropped them since)."""
    return (
        ScoreEvent.objects.filter(
            game=game,
            season_id=season_id,
            status=EventStatus.ACCEPTED,
            played_at__range=played_window(s for s in seasons_of(game=game) if s.id == season_id),
        )
        .exclude(extra_boards=[])
        .exists()
    )


@contextmanager
def ledger_entries(
    *,
    game: Game,
    kinds: Sequence[BoardKind],
    season_id: int | None = None,
    player_ids: Iterable[str] | None = None,
    include_hidden: bool = False,
    exclude_event_ids: Iterable[int] | None = None,
    ordered: bool = False,
    live_at: datetime | None = None,
    extras: bool = True,
    interleaved: bool = False,
    chunk: int | None = None,
) -> Iterator[Iterator[list[BoardEntry]]]:
    """The members of the game's boards of `kinds` as the ledger says they must be, streamed in
    chunks of `BoardEntry` rows (kind, season, region, period, player, encoded score, last write):

        with ledger_entries(game=game, kinds=[ALL]) as chunks:
            for rows in chunks: ...

    With `season_id`, that season's boards only; with `player_ids`, those players' entries only;
    with `include_hidden`, hidden players too (their own rank); `exclude_event_ids` leaves those
    results out. `ordered`: board after board, each in display order (score descending, then
    player id by code point). `live_at`: periodic boards only for periods that may still be live
    then (a result accepted within the kind's TTL before it); the caller drops the rest. `extras`
    False skips the extra dimensions' boards: for a season without any (`ledger_has_extra_boards`).

    Memory stays flat however large the season: `chunk` rows at a time (default STREAM_CHUNK).
    By default PostgreSQL sends the rows as it makes them while this process works on the ones
    before (the connection is busy until the block ends); `interleaved` fetches each chunk from a
    server-side cursor on request instead, so the caller may use the connection between chunks
    (the freeze COPYs each one into the standings). The block is a transaction of its own (a
    savepoint inside the caller's). Raises ScoreOverflow at a member whose score does not fit its
    season's exact capacity.
    """
    sql, params = _entries_sql(
        game=game,
        kinds=kinds,
        season_id=season_id,
        player_ids=player_ids,
        include_hidden=include_hidden,
        exclude_event_ids=exclude_event_ids,
        ordered=ordered,
        live_at=live_at,
        extras=extras,
    )
    size = chunk or STREAM_CHUNK
    with transaction.atomic():
        ledger_job_settings()
        with connection.cursor() as cursor:
            if not interleaved:
                yield _checked(_pushed(cursor.cursor.stream(sql, params, size=STREAM_BATCH), size))
                return
        with connection.chunked_cursor() as cursor:
            cursor.execute(sql, params)
            yield _checked(iter(lambda: cursor.fetchmany(size), []))


def _pushed(rows: Iterator[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    """Rows as the server pushes them, in lists of `size`."""
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _checked(chunks: Iterator[list[Any]]) -> Iterator[list[BoardEntry]]:
    for rows in chunks:
        if any(row[5] is None for row in rows):
            kind, season, region, period, player, *_ = next(row for row in rows if row[5] is None)
            raise ScoreOverflow(
                f"{player} on the {kind} board {region} {period} of season {season}: past the season's exact capacity"
            )
        yield cast(list[BoardEntry], rows)


def ledger_boards(
    *,
    game: Game,
    player_ids: Iterable[str] | None = None,
    season_id: int | None = None,
    include_hidden: bool = False,
    kinds: Sequence[BoardKind] | None = None,
    exclude_event_ids: Iterable[int] | None = None,
) -> dict[str, BoardScores]:
    """Every board of the game as the ledger says it must be, gathered: key -> members and encoded
    scores (`ledger_entries` says what the filters do). For a few players or a small game: a
    season-sized job streams `ledger_entries` instead."""
    boards: dict[str, BoardScores] = {}
    shards = season_shards(game=game)  # before the stream: its connection is busy until it ends
    with ledger_entries(
        game=game,
        kinds=list(KINDS.values()) if kinds is None else kinds,
        season_id=season_id,
        player_ids=player_ids,
        include_hidden=include_hidden,
        exclude_event_ids=exclude_event_ids,
    ) as chunks:
        for rows in chunks:
            for kind, sid, region, period, player, score, last in rows:
                ref = BoardRef(game.slug, sid, kind, region, period).for_player(player, shards[sid])
                board = boards.get(ref.key)
                if board is None:
                    board = boards[ref.key] = BoardScores(ref=ref, scores={}, last_write=moment_of(last))
                board.scores[player] = score
                board.last_write = max(board.last_write, moment_of(last))
    return boards


def player_results(*, game: Game, player_id: str, seasons: list[Season] | None = None) -> QuerySet[ScoreEvent]:
    """A player's results in the game (or in `seasons`): through the (season, player) index of each
    month the seasons span, never a scan of the game's rows."""
    chosen = seasons_of(game=game) if seasons is None else seasons
    return ScoreEvent.objects.filter(
        season_id__in=[s.id for s in chosen], player_id=player_id, played_at__range=played_window(chosen)
    )


def unapplied_ids(*, game: Game) -> list[int]:
    return [event_id for event_id, *_ in unapplied_events(game=game)]


def unapplied_events(*, game: Game, season_ids: Iterable[int] | None = None) -> list[tuple[int, str, datetime, int]]:
    """(event id, player id, accepted_at, season id) of the game's accepted results not yet marked
    applied, i.e. still in the outbox (of those seasons only, with `season_ids`)."""
    seasons = [s for s in seasons_of(game=game) if season_ids is None or s.id in set(season_ids)]
    events = ScoreEvent.objects.filter(
        game=game, status=EventStatus.ACCEPTED, unapplied__isnull=False, played_at__range=played_window(seasons)
    )
    if season_ids is not None:
        events = events.filter(season_id__in=[s.id for s in seasons])
    return list(events.values_list("id", "player_id", "accepted_at", "season_id"))


def players_touched_since(*, game: Game, since: datetime) -> set[str]:
    seasons = seasons_of(game=game)
    return set(
        ScoreEvent.objects.filter(
            game=game,
            accepted_at__gte=since,
            played_at__gte=played_floor(seasons, accepted_since=since),
            played_at__lt=played_window(seasons)[1],
        )
        .values_list("player_id", flat=True)
        .distinct()
    )


def boards_diff(*, game: Game, now: datetime) -> dict[str, dict[str, tuple[int | None, int | None]]]:
    """Live boards against the ledger: {key: {player: (redis score, ledger score)}} where they differ.

    Day and week boards whose TTL has run out are expected to be gone."""
    redis = boards_client()
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
        ).get(view.ref.for_player(player_id, view.season.board_shards).key)
        if board is None or player_id not in board.scores:
            return None
        score = board.scores[player_id]
        [rank] = board_ranks(view=view, members=[(player_id, score)])
        found = (view.shown(view.codec.points(score)), rank)
    if found is None:
        return None
    return OwnRank(player_id, found[0], found[1], player_hidden(game=view.game, player_id=player_id))


def queue_lag_s(*, now: datetime) -> float:
    """Age in seconds of the oldest accepted result not yet on the boards (0 when none): the oldest
    accept time in the outbox (a scan of that small table)."""
    oldest = UnappliedEvent.objects.aggregate(oldest=Min("accepted_at"))["oldest"]
    return max(0.0, (now - oldest).total_seconds()) if oldest else 0.0
