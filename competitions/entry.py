"""Results entering tournaments: each result a match names in a tournament gets its verdict before
the submission's answer is sent (docs/api.md, "Counting"), in the contract's order:
`outside_period`, `not_counted`, `not_entered`, `full`, `no_attempts_left`, `counted`.

The first two are decided here from the clock and the result's status; the rest by one Lua call
per (tournament, period) (lua/enter.lua), which reads and writes the period's counters in the same
call, so entrants and attempts are exact under any concurrency. The calls of one submission go in
one round trip: one pipeline on one Redis; on a Redis Cluster, where each period's keys lie in its
own slot and redis-py's cluster pipeline refuses scripts, one pipeline per node at once
(boards/scatter.py). The caller (scoring, which owns
the ledger) records the verdicts in its transaction and calls the returned undo if that
transaction fails, giving the counters back.
"""

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from redis.cluster import RedisCluster
from redis.commands.core import Script

from boards.scatter import scatter
from common.db import insert_rows
from common.redis import boards_client, lua_path, lua_script

from . import keys
from .counters import AttemptsOf, attempts_fill, entrants_fill, keys_expire_at
from .models import Tournament, TournamentEntrant
from .periods import Period, period_holding
from .services import schedule_of

ENTER_SCRIPT = lua_path(__file__, "enter.lua")
UNDO_SCRIPT = lua_path(__file__, "enter_undo.lua")
COUNTED, OUTSIDE_PERIOD, NOT_COUNTED = "counted", "outside_period", "not_counted"
NOT_ENTERED, FULL, NO_ATTEMPTS_LEFT = "not_entered", "full", "no_attempts_left"
VERDICTS = (OUTSIDE_PERIOD, NOT_COUNTED, NOT_ENTERED, FULL, NO_ATTEMPTS_LEFT, COUNTED)
_CODES = {1: COUNTED, 2: COUNTED, 3: NOT_ENTERED, 4: FULL, 5: NO_ATTEMPTS_LEFT}
FILL_TRIES = 3


@dataclass
class Entry:
    """One result named in one tournament, and what was decided for it."""

    tournament: Tournament
    player_id: str
    played_at: datetime
    accepted: bool
    period: int | None = None
    verdict: str = ""
    entered: bool = False  # this result entered the player in the period (without join_required)


_GroupKey = tuple[int, int]  # tournament pk, period index


def entries_decide(*, entries: list[Entry], now: datetime, attempts_of: AttemptsOf) -> Callable[[], None]:
    """Decide every entry's verdict (filled in place). Returns the undo: it gives back the
    attempts and seats taken, for a caller whose transaction did not commit."""
    groups: dict[_GroupKey, list[Entry]] = defaultdict(list)
    periods: dict[_GroupKey, Period] = {}
    holding: dict[tuple[int, datetime], Period | None] = {}  # a match's results share its played_at
    for entry in entries:
        found = (entry.tournament.pk, entry.played_at)
        if found not in holding:
            holding[found] = period_holding(schedule_of(entry.tournament), entry.played_at)
        period = holding[found]
        if period is None or period.closes_at <= now:
            entry.verdict = OUTSIDE_PERIOD
            continue
        entry.period = period.index
        if not entry.accepted:
            entry.verdict = NOT_COUNTED
            continue
        group = (entry.tournament.pk, period.index)
        groups[group].append(entry)
        periods[group] = period
    if groups:
        _groups_decide(groups, periods, attempts_of)
    taken = [e for e in entries if e.verdict == COUNTED]
    return lambda: entries_undo(entries=taken)


def _call(group: list[Entry], period: Period) -> tuple[list[str], list[str | int]]:
    tournament = group[0].tournament
    game, slug = tournament.game.slug, tournament.slug
    script_keys = [keys.entrants_key(game, slug, period.index), keys.attempts_key(game, slug, period.index)]
    args: list[str | int] = [
        tournament.max_entrants if tournament.max_entrants is not None else -1,
        tournament.max_attempts if tournament.max_attempts is not None else -1,
        int(tournament.join_required),
        keys_expire_at(period),
        *(e.player_id for e in group),
    ]
    return script_keys, args


def _groups_decide(
    groups: dict[_GroupKey, list[Entry]], periods: dict[_GroupKey, Period], attempts_of: AttemptsOf
) -> None:
    """One enter.lua call per group, all pipelined; a group whose counters are not filled is
    filled from the database and called again."""
    script = lua_script(ENTER_SCRIPT)
    todo = list(groups)
    for _ in range(FILL_TRIES):
        replies = scripts_run(script, [_call(groups[group], periods[group]) for group in todo])
        again = []
        for group, reply in zip(todo, replies, strict=True):
            if reply in (b"load", "load"):
                tournament, period = groups[group][0].tournament, periods[group]
                entrants_fill(tournament=tournament, period=period)
                attempts_fill(tournament=tournament, period=period, attempts=attempts_of(tournament, period.index))
                again.append(group)
                continue
            for entry, code in zip(groups[group], reply, strict=True):
                entry.verdict = _CODES[int(code)]
                entry.entered = int(code) == 2
        if not again:
            return
        todo = again
    raise RuntimeError("tournament counters could not be filled")


def entries_undo(*, entries: list[Entry]) -> None:
    """Give back the attempts (and seats) that these counted entries took."""
    by_group: dict[_GroupKey, list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.verdict == COUNTED and entry.period is not None:
            by_group[(entry.tournament.pk, entry.period)].append(entry)
    if not by_group:
        return
    calls: list[tuple[list[str], list[str | int]]] = []
    for (_, index), group in by_group.items():
        tournament = group[0].tournament
        game, slug = tournament.game.slug, tournament.slug
        flat: list[str | int] = []
        for e in group:
            flat += [e.player_id, int(e.entered)]
        calls.append(([keys.entrants_key(game, slug, index), keys.attempts_key(game, slug, index)], flat))
    scripts_run(lua_script(UNDO_SCRIPT), calls)


def scripts_run(script: Script, calls: Sequence[tuple[list[str], Sequence[Any]]]) -> list[Any]:
    """The replies of `script` run once per call (its KEYS, in one slot, and ARGV), in order, in one
    round trip: a pipeline on one Redis; on a cluster each node's calls pipelined, the nodes at once
    (boards/scatter.py, which sends a call that met a redirect or a reload down redis-py's own path)."""
    redis = boards_client()
    if isinstance(redis, RedisCluster):
        return scatter(
            redis,
            [(script, script_keys, args) for script_keys, args in calls],
            hedge=False,
            fallback=lambda index: script(keys=calls[index][0], args=calls[index][1], client=redis),
            observe=lambda index, seconds: None,
        )
    pipe = redis.pipeline(transaction=False)
    for script_keys, args in calls:
        script(keys=script_keys, args=args, client=pipe)
    return list(pipe.execute())


def entrants_record(*, entries: list[Entry], now: datetime) -> None:
    """The players these entries entered, as `TournamentEntrant` rows (in the caller's transaction)."""
    rows = [(e.tournament.pk, e.period, e.player_id, now) for e in entries if e.entered and e.period is not None]
    if rows:  # one statement, no model instances (a batch of first results enters hundreds)
        insert_rows(
            TournamentEntrant._meta.db_table,
            [("tournament_id", "bigint"), ("period", "integer"), ("player_id", "text"), ("joined_at", "timestamptz")],
            rows,
            on_conflict="ON CONFLICT DO NOTHING",
        )


def tournaments_named(*, game_id: int, slugs: set[str]) -> dict[str, Tournament]:
    """The game's tournaments among these ids (one query)."""
    if not slugs:
        return {}
    found = Tournament.objects.filter(game_id=game_id, slug__in=slugs).select_related("game")
    return {t.slug: t for t in found}
