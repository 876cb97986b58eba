"""A tournament period's exact counters in Redis: its entrants (a set) and each player's counted
attempts (a hash), read and written only by Lua scripts that decide and write in one call
(lua/join.lua, lua/enter.lua), so two web processes can never both pass a limit.

The counters are an index of the database: entrants of `TournamentEntrant`, attempts of the
ledger's counted results (scoring). A counter without its "filled" mark (a new period, or a Redis
that lost its data) is filled from them first (lua/fill_*.lua, which write only when no other
caller has filled it meanwhile), then the decision is made again.
"""

from collections.abc import Callable
from typing import NamedTuple

from django.conf import settings

from common.redis import boards_client, lua_path, lua_script

from . import keys
from .keys import ATTEMPTS_VERSION, FILLED
from .models import Tournament, TournamentEntrant
from .periods import Period

JOIN_SCRIPT = lua_path(__file__, "join.lua")
FILL_ENTRANTS_SCRIPT = lua_path(__file__, "fill_entrants.lua")
FILL_ATTEMPTS_SCRIPT = lua_path(__file__, "fill_attempts.lua")
REPAIR_SCRIPT = lua_path(__file__, "counters_repair.lua")
FILL_TRIES = 3

AttemptsOf = Callable[[Tournament, int], dict[str, int]]  # the ledger's counted results per player
_attempts_source: list[AttemptsOf] = []


def attempts_source_set(source: AttemptsOf) -> None:
    """Name where the counted attempts come from (the ledger: the app that owns it sets this when
    it is ready), for the reads that fill a lost attempts hash."""
    _attempts_source[:] = [source]


def counters_fill(*, tournament: Tournament, period: Period) -> None:
    """Fill the period's entrants and attempts from the database unless they are filled already."""
    if not _attempts_source:
        raise RuntimeError("no source of counted attempts (the scoring app sets it when ready)")
    entrants_fill(tournament=tournament, period=period)
    attempts_fill(tournament=tournament, period=period, attempts=_attempts_source[0](tournament, period.index))


def keys_expire_at(period: Period) -> int:
    """When a period's keys expire (Unix seconds): a while after its grace ends."""
    moment = period.closes_at.timestamp() + settings.TOURNAMENT_KEYS_TTL_AFTER_FINAL_S
    return int(moment) + 1


def entrants_fill(*, tournament: Tournament, period: Period) -> bool:
    """Fill the period's entrant set from `TournamentEntrant` unless it is filled already."""
    players = list(
        TournamentEntrant.objects.filter(tournament=tournament, period=period.index).values_list("player_id", flat=True)
    )
    key = keys.entrants_key(tournament.game.slug, tournament.slug, period.index)
    reply = lua_script(FILL_ENTRANTS_SCRIPT)(
        keys=[key], args=[keys_expire_at(period), *players], client=boards_client()
    )
    return bool(reply)


def attempts_fill(*, tournament: Tournament, period: Period, attempts: dict[str, int]) -> bool:
    """Fill the period's attempts hash from the ledger's counts unless it is filled already."""
    key = keys.attempts_key(tournament.game.slug, tournament.slug, period.index)
    flat: list[str | int] = []
    for player_id, count in attempts.items():
        flat += [player_id, count]
    reply = lua_script(FILL_ATTEMPTS_SCRIPT)(keys=[key], args=[keys_expire_at(period), *flat], client=boards_client())
    return bool(reply)


def seat_take(*, tournament: Tournament, period: Period, player_id: str) -> int:
    """Enter the player in the period's set, exactly: 1 entered, 0 already in, -1 full."""
    key = keys.entrants_key(tournament.game.slug, tournament.slug, period.index)
    limit = tournament.max_entrants if tournament.max_entrants is not None else -1
    script = lua_script(JOIN_SCRIPT)
    for _ in range(FILL_TRIES):
        reply = script(keys=[key], args=[player_id, limit, keys_expire_at(period)], client=boards_client())
        if reply in (b"load", "load"):
            entrants_fill(tournament=tournament, period=period)
            continue
        return int(reply)
    raise RuntimeError(f"the entrants of {tournament} #{period.index} could not be filled")


def seat_give_back(*, tournament: Tournament, period: Period, player_ids: list[str]) -> None:
    """Undo seats taken by a request whose transaction did not commit."""
    if player_ids:
        key = keys.entrants_key(tournament.game.slug, tournament.slug, period.index)
        boards_client().srem(key, *player_ids)


def entrants_count(*, tournament: Tournament, period: int) -> int:
    """Entrants of a period, from the database (what has committed)."""
    return TournamentEntrant.objects.filter(tournament=tournament, period=period).count()


class Counters(NamedTuple):
    """A period's counters as Redis holds them (without the "filled" marks)."""

    filled: bool  # both carry their mark (else the next use fills them from the database)
    attempts: dict[str, int]
    entrants: set[str]


def counters_read(*, tournament: Tournament, period: Period, player_ids: list[str] | None = None) -> Counters:
    """The period's counters (of these players only, when given), read in one round trip."""
    game, slug = tournament.game.slug, tournament.slug
    entrants_key, attempts_key = (
        keys.entrants_key(game, slug, period.index),
        keys.attempts_key(game, slug, period.index),
    )
    pipe = boards_client().pipeline(transaction=False)  # one slot: one node
    pipe.sismember(entrants_key, FILLED)
    pipe.hexists(attempts_key, FILLED)
    if player_ids is None:
        pipe.hgetall(attempts_key)
        pipe.smembers(entrants_key)
        marked_in, marked_a, counts, members = pipe.execute()
    else:
        pipe.hmget(attempts_key, [FILLED, *player_ids])
        pipe.smismember(entrants_key, [FILLED, *player_ids])
        marked_in, marked_a, found, flags = pipe.execute()
        counts = {p: n for p, n in zip(player_ids, found[1:], strict=True) if n is not None}
        members = {p for p, flag in zip(player_ids, flags[1:], strict=True) if flag}
    return Counters(
        bool(marked_in) and bool(marked_a),
        {str(p): int(n) for p, n in counts.items() if p not in (FILLED, ATTEMPTS_VERSION) and int(n)},
        {str(p) for p in members if p != FILLED},
    )


CounterFix = tuple[str, str, int, int]  # "a" (attempts) or "e" (entrant), player, value seen, value wanted


def counters_repair(*, tournament: Tournament, period: Period, fixes: list[CounterFix]) -> int:
    """Write the database's values where the counters were seen apart from it, each only if it
    still holds the value seen (lua/counters_repair.lua). Returns the number written (-1: a counter
    is not filled; its next use fills it)."""
    if not fixes:
        return 0
    game, slug = tournament.game.slug, tournament.slug
    flat: list[str | int] = []
    for fix in fixes:
        flat += list(fix)
    reply = lua_script(REPAIR_SCRIPT)(
        keys=[keys.entrants_key(game, slug, period.index), keys.attempts_key(game, slug, period.index)],
        args=flat,
        client=boards_client(),
    )
    return int(reply)
