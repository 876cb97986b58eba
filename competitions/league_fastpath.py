"""The fast entrance of the live league reads (the player read and the cohort read): an ASGI
handler in front of Django, built on the board reads' (boards/fastpath.py `FastReads`: its Redis
client, its script loading, its read throttle), answering each in one Redis call: the cohort
script (lua/league_cohort.lua, shaped by league_standings.py as Django's read shapes it) with the
league's configuration version in front of its reply. The league comes from this process's copy of
its configuration in Redis (league_standings.py `conf_publish`), read again when the call says it
has changed.

It answers 200s and the errors it can decide by itself (400 for a bad player id, 404
`unknown_cohort` by a current configuration or the period's state, 429, 503). Everything else goes
to Django unchanged: a league without its copy in Redis (new, or flushed: Django's read writes it),
a period past its grace or not started (final or not is the database's word; an upcoming period
has no state), a period whose assignment state Redis does not hold, a player with no seat in the
period shown after the first period (their division is in PostgreSQL), and every read on a Redis
Cluster.
"""

import threading
from datetime import datetime
from typing import Any

from django.utils import timezone

from common.api_errors import RETRY_AFTER_S
from common.asgi import (
    Fallback,
    Scope,
    query_values,
    render,
)
from common.formats import PLAYER_ID_RE
from common.operations import INVALID, Operation, Router

from . import league_keys as keys
from .fastpath import RoutedReads
from .league_apis import LEAGUE_OPERATIONS, LeagueRead, unknown_cohort
from .league_boards import cohort_id_parse
from .league_standings import (
    COHORT_SCRIPT,
    LeagueConf,
    StateNotFilled,
    cohort_call,
    cohort_entries,
    cohort_parse,
    cohort_present,
    conf_parse,
    period_json,
)
from .periods import ACTIVE, GRACE, Period, period_number, period_shown

ROUTER = Router(LEAGUE_OPERATIONS, serves=lambda op: isinstance(op.fast, LeagueRead))
RETRY_AFTER = {"Retry-After": str(RETRY_AFTER_S)}
_NO_QUERY: dict[str, str] = {}
_confs: dict[tuple[str, str], LeagueConf] = {}  # this process's copies, by (game, league)
_confs_lock = threading.Lock()


def confs_forget() -> None:
    """Forget this process's copies of leagues (tests)."""
    with _confs_lock:
        _confs.clear()


class _Unknown(Exception):
    """The cohort id names no cohort, by the configuration held: 404 once it is known current."""


class FastLeagues(RoutedReads):
    """ASGI: the live league reads here, everything else to `fallback`."""

    router = ROUTER

    async def conf(self, game: str, slug: str) -> LeagueConf:
        """The league's configuration as Redis has it now (Fallback: none there)."""
        raw = await self.client().get(keys.conf_key(game, slug))
        if raw is None:
            raise Fallback
        conf = conf_parse(raw)
        with _confs_lock:
            _confs[(game, slug)] = conf
        return conf

    async def answer(self, op: Operation, path_args: dict[str, str], scope: Scope) -> bytes:
        """The read's body: the period and seat resolved by this process's copy of the league, the
        script called with the configuration's version key; a version other than the copy's means
        the league changed: read it again."""
        read: LeagueRead = op.fast
        query = scope.get("query_string", b"")
        args = op.arguments(path_args, query_values(query) if query else _NO_QUERY)
        now = timezone.now()
        self.throttle(scope, now)
        game, slug = args["game"], args["league_id"]
        version_key = keys.conf_version_key(game, slug)
        conf = _confs.get((game, slug))
        for _attempt in range(2):
            if conf is None:
                conf = await self.conf(game, slug)
            if read.player and not PLAYER_ID_RE.match(args["player_id"]):
                raise INVALID(f"{args['player_id']!r} is not a player id.")
            try:
                period, seat = _resolved(conf, read, args, now)
            except _Unknown:
                if await self.catalog_version(version_key) == conf.version:
                    raise unknown_cohort(args["cohort_id"]) from None
                conf = None
                continue
            status = period.status_at(now)
            if status not in (ACTIVE, GRACE):
                raise Fallback  # past its grace (final or not: the database's), or not started (no state)
            call = cohort_call(conf, period.index, player_id=args["player_id"] if read.player else "", seat=seat)
            version, [reply] = await self.together([(COHORT_SCRIPT, *call)], version_key)
            if version != conf.version:
                conf = None
                continue
            try:
                found, flat = cohort_parse(reply)
            except StateNotFilled:
                raise Fallback from None
            return render(op.render(_present(conf, read, args, period, status, found, flat)))
        raise Fallback


def _resolved(
    conf: LeagueConf, read: LeagueRead, args: dict[str, Any], now: datetime
) -> tuple[Period, tuple[int, int] | None]:
    """The period the read means and, for a cohort read, the seat its id names (_Unknown: none)."""
    if read.player:
        period = period_shown(conf.schedule, now)
        if period is None:
            raise Fallback
        return period, None
    parsed = cohort_id_parse(args["cohort_id"])
    if parsed is None:
        raise _Unknown
    index, name, number = parsed
    if name not in conf.division_names:
        raise _Unknown
    found = period_number(conf.schedule, index)
    if found is None:
        raise _Unknown
    return found, (conf.division_names.index(name), number)


def _present(
    conf: LeagueConf,
    read: LeagueRead,
    args: dict[str, Any],
    period: Period,
    status: str,
    seat: tuple[int, int] | None,
    flat: list[Any],
) -> dict[str, Any]:
    cohort = None
    if seat is not None:
        cohort = cohort_present(conf, period, status, seat, cohort_entries(conf, period, seat[0], flat))
    if not read.player:
        if cohort is None:
            raise unknown_cohort(args["cohort_id"])
        return cohort
    if seat is None and period.index != 1:
        raise Fallback  # their division is what an earlier period's end left in PostgreSQL
    # Seated: the seat's division; else in the first period everyone is in the lowest.
    division = seat[0] if seat is not None else 0
    return {
        "player_id": args["player_id"],
        "division": conf.division_names[division],
        "period": period_json(period, status),
        "cohort": cohort,
    }
