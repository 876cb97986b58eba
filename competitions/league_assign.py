"""Cohort assignment: a player's first accepted result of a league period seats them in a cohort of
their division (docs/api.md, "Leagues"), decided before the submission's answer is sent.

The batch's players are first looked up in each period's player map (one HMGET a period, all
pipelined: most results of a period are of players seated already, `_seats_known`). For the rest,
each (league, period) of a batch is one call of lua/league_assign.lua, all pipelined: it looks them
up in the period's player map again and seats those without a cohort in their division's
open cohort (or a free seat left below it), opening the next cohort when the open one has
`cohort_size`, in the same call. So cohort sizes are exact and no player is in two cohorts under
any number of web processes: the map and every division's counters share the period's hash tag
(league_keys.py), one slot on a Redis Cluster. The caller (scoring, which owns the ledger) records
the seats (`members_record`: LeagueMember and LeagueCohort rows) and its results' cohorts in its
transaction, and calls the returned undo when that transaction fails, which gives the seats back.

A player's division is read from PostgreSQL before the call (`divisions_of`): their LeaguePlayer
row, else the lowest. A player whose division is not known yet, because an earlier period they
played in (or, with `demote_idle`, any earlier period) has not ended, is not seated: their seat is
`waiting`, and the end of that period seats them (league_closing.py).
"""

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.db.models import Max
from redis.cluster import RedisCluster

from common.db import insert_rows, rows_by_keys
from common.redis import boards_client, lua_path, lua_script

from . import league_keys as keys
from .league_models import League, LeagueCohort, LeagueMember, LeaguePeriod, LeaguePeriodState, LeaguePlayer
from .periods import Period

ASSIGN_SCRIPT = lua_path(__file__, "league_assign.lua")
UNSEAT_SCRIPT = lua_path(__file__, "league_unseat.lua")
FILL_SCRIPT = lua_path(__file__, "league_fill.lua")
RAISE_SCRIPT = lua_path(__file__, "league_raise.lua")
FILL_TRIES = 3
FILL_CHUNK = 5000


@dataclass
class Seat:
    """One accepted result's player in one league period, and the cohort it counts in."""

    league: League
    period: Period
    player_id: str
    division: int | None = None  # None: waiting for an earlier period's end
    number: int | None = None
    new: bool = False  # this call seated the player
    opened: bool = False  # ... as the cohort's first member (its LeagueCohort row is written)

    @property
    def waiting(self) -> bool:
        return self.number is None


def keys_expire_at(period: Period) -> int:
    """When a period's keys expire (Unix seconds): a while after its grace ends."""
    return int(period.closes_at.timestamp() + settings.TOURNAMENT_KEYS_TTL_AFTER_FINAL_S) + 1


def _state_keys(league: League, index: int) -> list[str]:
    game, slug = league.game.slug, league.slug
    return [keys.members_key(game, slug, index), keys.state_key(game, slug, index), keys.holes_key(game, slug, index)]


def last_final_index(league: League) -> int:
    """The last period whose end is done (0: none)."""
    found = LeaguePeriod.objects.filter(league=league, state=LeaguePeriodState.FINAL).aggregate(m=Max("index"))
    return int(found["m"] or 0)


def divisions_of(*, league: League, index: int, player_ids: Iterable[str]) -> dict[str, int | None]:
    """Each player's division for period `index` (None: not known until an earlier period ends)."""
    players = sorted(set(player_ids))
    # By one comma-joined parameter, not `player_id__in`: psycopg splits a query of 500 placeholders
    # anew at each execution (too long for its cache), a fifth of a batch's league CPU on the web.
    rows = rows_by_keys(
        LeaguePlayer._meta.db_table,
        ["player_id", "division"],
        equal={"league_id": league.pk},
        key="player_id",
        key_type="text",
        keys=players,
    )
    known: dict[str, int | None] = dict.fromkeys(players, 0)
    known.update(rows)
    final = last_final_index(league) if index > 1 else 0
    if index - 1 > final:  # earlier periods whose end is not done: their players wait for it
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT DISTINCT player_id FROM {LeagueMember._meta.db_table} WHERE league_id = %s "
                "AND period > %s AND period < %s AND player_id = ANY(string_to_array(%s, ','))",
                [league.pk, final, index, ",".join(players)],
            )
            unsettled = [row[0] for row in cursor.fetchall()]
        for player_id in unsettled:
            known[player_id] = None
        if league.demote_idle:
            for player_id, division in list(known.items()):
                if division:  # any earlier period may move them down
                    known[player_id] = None
    return known


_Group = tuple[int, int]  # league pk, period index


def seats_decide(*, seats: list[Seat]) -> Callable[[], None]:
    """Every seat's division and cohort (filled in place; `new` for players seated now). Returns the
    undo, for a caller whose transaction did not commit."""
    groups: dict[_Group, list[Seat]] = defaultdict(list)
    for seat in seats:
        groups[(seat.league.pk, seat.period.index)].append(seat)
    _seats_known(groups)
    called: dict[_Group, list[Seat]] = {}
    for group, found in groups.items():
        unseated = [s for s in found if s.number is None]
        if not unseated:
            continue
        league, index = found[0].league, group[1]
        divisions = divisions_of(league=league, index=index, player_ids=(s.player_id for s in unseated))
        for seat in unseated:
            seat.division = divisions[seat.player_id]
        ready = [s for s in unseated if s.division is not None]
        if ready:
            called[group] = ready
    if called:
        _groups_call(called)
    taken = [s for s in seats if s.new]
    return lambda: seats_undo(seats=taken)


def _seats_known(groups: dict[_Group, list[Seat]]) -> None:
    """The seats the players have already (one HMGET of each period's player map, pipelined),
    filled in place: most results of a period are of players seated by an earlier one, and those
    need neither their division (a query) nor the assignment script. A seat only ever leaves the
    map by `seats_undo`, as it would between this read and the script's; a map not filled yet
    (after Redis lost it) has none, and the script fills it."""
    pipe = boards_client().pipeline(transaction=False)
    for found in groups.values():
        league = found[0].league
        pipe.hmget(keys.members_key(league.game.slug, league.slug, found[0].period.index), [s.player_id for s in found])
    for found, values in zip(groups.values(), pipe.execute(), strict=True):
        for seat, value in zip(found, values, strict=True):
            if value is not None:
                division, number = (value.decode() if isinstance(value, bytes) else value).split(":")
                seat.division, seat.number = int(division), int(number)


def _call(group: list[Seat]) -> tuple[list[str], list[str | int]]:
    league, period = group[0].league, group[0].period
    args: list[str | int] = [league.cohort_size, keys_expire_at(period)]
    for seat in group:
        args += [seat.player_id, seat.division or 0]
    return _state_keys(league, period.index), args


def _groups_call(groups: dict[_Group, list[Seat]]) -> None:
    """One league_assign.lua call per group, all pipelined; a group whose state is not filled is
    filled from the database and called again."""
    redis = boards_client()
    script = lua_script(ASSIGN_SCRIPT)
    todo = list(groups)
    cluster = isinstance(redis, RedisCluster)  # no scripts in a cluster's pipeline: one call each
    for _ in range(FILL_TRIES):
        pipe = redis.pipeline(transaction=False)
        replies = []
        for group in todo:
            script_keys, args = _call(groups[group])
            replies.append(script(keys=script_keys, args=args, client=redis if cluster else pipe))
        if not cluster:
            replies = pipe.execute()
        again = []
        for group, reply in zip(todo, replies, strict=True):
            if reply in (b"load", "load"):
                state_fill(league=groups[group][0].league, period=groups[group][0].period)
                again.append(group)
                continue
            for seat, code in zip(groups[group], reply, strict=True):
                division, number, new = (code.decode() if isinstance(code, bytes) else code).split(":")
                seat.division, seat.number = int(division), int(number)
                seat.new, seat.opened = new != "0", new == "2"
        if not again:
            return
        todo = again
    raise RuntimeError("league assignment state could not be filled")


def seats_undo(*, seats: list[Seat]) -> None:
    """Give back the seats these (new) seats took."""
    by_group: dict[_Group, list[Seat]] = defaultdict(list)
    for seat in seats:
        if seat.new:
            by_group[(seat.league.pk, seat.period.index)].append(seat)
    if not by_group:
        return
    redis = boards_client()
    script = lua_script(UNSEAT_SCRIPT)
    cluster = isinstance(redis, RedisCluster)
    pipe = redis.pipeline(transaction=False)
    for (_, index), group in by_group.items():
        flat: list[str] = []
        for s in group:
            flat += [s.player_id, f"{s.division}:{s.number}"]
        script(keys=_state_keys(group[0].league, index), args=flat, client=redis if cluster else pipe)
    if not cluster:
        pipe.execute()


def members_record(*, seats: list[Seat], now: datetime) -> None:
    """The players seated now as LeagueMember rows, and the cohorts they opened as LeagueCohort rows
    (in the caller's transaction)."""
    new = [s for s in seats if s.new]
    if not new:
        return
    # One statement, no model instances: a batch of first results seats hundreds of players.
    insert_rows(
        LeagueMember._meta.db_table,
        [
            ("league_id", "bigint"),
            ("period", "integer"),
            ("player_id", "text"),
            ("division", "integer"),
            ("number", "integer"),
            ("joined_at", "timestamptz"),
        ],
        [(s.league.pk, s.period.index, s.player_id, s.division or 0, s.number or 0, now) for s in new],
        on_conflict="ON CONFLICT DO NOTHING",
    )
    # Only a cohort's first member writes its row (so concurrent members do not wait on each
    # other's insert); the period's end writes any a failed transaction left out.
    cohorts = {(s.league.pk, s.period.index, s.division or 0, s.number or 0): s.league for s in new if s.opened}
    LeagueCohort.objects.bulk_create(
        [LeagueCohort(league=lg, period=p, division=d, number=n) for (_, p, d, n), lg in sorted(cohorts.items())],
        ignore_conflicts=True,
    )


def state_fill(*, league: League, period: Period) -> bool:
    """Fill the period's assignment state from its LeagueMember rows unless it is filled already:
    the player map staged in chunks, then put in place with the counters by one call."""
    game, slug, index = league.game.slug, league.slug, period.index
    staging = keys.staging_key(game, slug, index)
    redis = boards_client()
    redis.delete(staging)
    sizes: dict[tuple[int, int], int] = defaultdict(int)
    rows = LeagueMember.objects.filter(league=league, period=index).values_list("player_id", "division", "number")
    chunk: dict[str, str] = {}
    for player_id, division, number in rows.iterator(chunk_size=FILL_CHUNK):
        chunk[player_id] = f"{division}:{number}"
        sizes[(division, number)] += 1
        if len(chunk) >= FILL_CHUNK:
            redis.hset(staging, mapping=chunk)  # type: ignore[arg-type]
            chunk = {}
    if chunk:
        redis.hset(staging, mapping=chunk)  # type: ignore[arg-type]
    redis.expire(staging, 600)
    flat: list[int] = []
    for (division, number), size in sorted(sizes.items()):
        flat += [division, number, size]
    script_keys = [*_state_keys(league, index), staging]
    reply = lua_script(FILL_SCRIPT)(
        keys=script_keys, args=[keys_expire_at(period), league.cohort_size, *flat], client=redis
    )
    return bool(reply)


def state_raise(*, league: League, period: Period, seats: dict[str, str], counters: dict[str, int]) -> int:
    """Raise the period's assignment state to stored seats ("D:N" by player, written where the map
    has none) and counters (written where lower): the reconciliation's repair of a state behind the
    database (lua/league_raise.lua). Returns the number of fields written."""
    game, slug, index = league.game.slug, league.slug, period.index
    script_keys = [keys.members_key(game, slug, index), keys.state_key(game, slug, index)]
    args: list[str | int] = [keys_expire_at(period), len(seats)]
    for player, seat in sorted(seats.items()):
        args += [player, seat]
    for counter, value in sorted(counters.items()):
        args += [counter, value]
    return int(lua_script(RAISE_SCRIPT)(keys=script_keys, args=args, client=boards_client()))


def seat_of(*, league: League, index: int, player_id: str) -> tuple[int, int] | None:
    """The player's (division, cohort number) in a period, from the committed rows."""
    row = LeagueMember.objects.filter(league=league, period=index, player_id=player_id).values_list(
        "division", "number"
    )
    found = row.first()
    return (int(found[0]), int(found[1])) if found is not None else None
