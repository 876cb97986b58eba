"""A tournament period's board, read: top, a player, around a player (docs/api.md, "Tournaments").

Both entrances answer these reads from the same declaration (apis.py `StandingRead`): Django's
view and the fast entrance (fastpath.py) resolve the period from a `TournamentConf`, run the same
Lua script (lua/top.lua, player.lua, around.lua, with boards/lua/ranking_lib.lua: the game's tie
rule, exactly as on the season boards) and shape its reply with the same functions here.

`TournamentConf` is what a read needs of a tournament and its game. Django builds it from the row;
the fast entrance from its copy in Redis (`conf_publish`, written after every save of the row, and
again by a Django read that finds it missing or older), checked in the read's own call: its version
(the row's `updated_at` in microseconds, with the game's tie rule) comes back in front of the reply.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

import orjson
from django.db import transaction

import boards
from boards.codec import ScoreCodec
from boards.keys import distinct_key, epoch_micros, hidden_key, names_key, names_version_key, version_key
from boards.selectors import VersionedCache
from boards.slots import hidden_slots_fill
from common.redis import boards_client, lua_path, lua_script, on_cluster

from . import keys
from .boards import period_time_bits
from .counters import counters_fill
from .models import Order, Tournament
from .periods import (
    FINAL,
    Period,
    Schedule,
    first_period,
    period_holding,
    period_last_before,
    period_next,
    period_number,
)

RANKING_LIB = lua_path(boards.__file__, "ranking_lib.lua")
TOP_SCRIPT = f"{RANKING_LIB}+{lua_path(__file__, 'standing_lib.lua', 'top.lua')}"
PLAYER_SCRIPT = f"{RANKING_LIB}+{lua_path(__file__, 'standing_lib.lua', 'player.lua')}"
AROUND_SCRIPT = f"{RANKING_LIB}+{lua_path(__file__, 'standing_lib.lua', 'around.lua')}"
Call = tuple[list[str], list[Any]]  # a read script's KEYS and ARGV


class UnknownPeriod(LookupError):
    pass


class CountersNotFilled(RuntimeError):
    """The period's counters are not in Redis: fill them from the database and read again."""


@dataclass(frozen=True)
class TournamentConf:
    """What a board read needs of a tournament and its game."""

    game: str
    slug: str
    version: str
    tie_rule: str
    order: str
    starts_at: datetime
    ends_at: datetime | None
    duration_s: int
    reset: str
    grace_s: int
    ended_at: datetime | None
    max_attempts: int | None
    rewards: list[dict[str, Any]] = field(default_factory=list)

    @property
    def schedule(self) -> Schedule:
        return Schedule(self.starts_at, self.ends_at, self.duration_s, self.reset, self.grace_s, self.ended_at)

    def reward(self, rank: int | None) -> Any:
        """The reward of the band holding `rank` (None outside the bands, or without a rank)."""
        if rank is None:
            return None
        for band in self.rewards:
            if band["rank_from"] <= rank <= band["rank_to"]:
                return band["reward"]
        return None


def conf_of(tournament: Tournament) -> TournamentConf:
    tie_rule = tournament.game.tie_rule
    return TournamentConf(
        game=tournament.game.slug,
        slug=tournament.slug,
        version=f"{epoch_micros(tournament.updated_at)}.{tie_rule}",
        tie_rule=tie_rule,
        order=tournament.order,
        starts_at=tournament.starts_at,
        ends_at=tournament.ends_at,
        duration_s=tournament.duration_s,
        reset=tournament.reset,
        grace_s=tournament.grace_s,
        ended_at=tournament.ended_at,
        max_attempts=tournament.max_attempts,
        rewards=list(tournament.rewards or []),
    )


_TIMES = ("starts_at", "ends_at", "ended_at")


def conf_parse(raw: bytes | str) -> TournamentConf:
    doc = orjson.loads(raw)
    for name in _TIMES:
        doc[name] = datetime.fromisoformat(doc[name]) if doc[name] is not None else None
    return TournamentConf(**doc)


def conf_publish(conf: TournamentConf) -> None:
    """The fast entrance's copy of the tournament (its document and version, in one transaction)."""
    doc = {name: getattr(conf, name) for name in TournamentConf.__dataclass_fields__}
    for name in _TIMES:
        doc[name] = doc[name].isoformat() if doc[name] is not None else None
    pipe = boards_client().pipeline(transaction=True)
    pipe.set(keys.conf_key(conf.game, conf.slug), orjson.dumps(doc))
    pipe.set(keys.conf_version_key(conf.game, conf.slug), conf.version)
    pipe.execute()


def conf_current(tournament: Tournament) -> TournamentConf:
    """The tournament's read configuration; its copy in Redis written again when missing or older."""
    conf = conf_of(tournament)
    if boards_client().get(keys.conf_version_key(conf.game, conf.slug)) != conf.version:
        conf_publish(conf)
    return conf


def period_of(conf: TournamentConf, index: int | None, now: datetime) -> Period:
    """The period a read means: `index`, or by default the active one, else the last that started,
    else the first. A period after the next one is unknown (UnknownPeriod)."""
    schedule = conf.schedule
    if index is None:
        found = period_holding(schedule, now) or period_last_before(schedule, now) or first_period(schedule)
    else:
        found = period_number(schedule, index)
        if found is not None and found.starts_at > now:
            upcoming = period_next(schedule, now)
            found = found if upcoming is not None and upcoming.index == found.index else None
    if found is None:
        raise UnknownPeriod(index)
    return found


@dataclass(frozen=True)
class StandingView:
    """A resolved period board: the tournament, the period and its status as the reader sees it."""

    conf: TournamentConf
    period: Period
    status: str

    @cached_property
    def codec(self) -> ScoreCodec:
        return ScoreCodec(period_time_bits(self.conf))

    def shown(self, stored_points: int) -> int:
        return self.codec.shown_points(stored_points, ascending=self.conf.order == Order.ASC)

    def keys(self) -> list[str]:
        """The read scripts' KEYS: the board, its distinct points, the names, attempts, entrants,
        hidden players. On a Redis Cluster every key lies in the period's slot: the hidden players'
        copy there (boards/slots.py), and for the names a hash never written (the game's lies in
        another slot: `standing_select` fills the names in after)."""
        game, slug, index = self.conf.game, self.conf.slug, self.period.index
        board = keys.board_key(game, slug, index)
        tag = keys.period_tag(game, slug, index) if on_cluster() else ""
        return [
            board,
            distinct_key(board),
            keys.names_elsewhere_key(game, slug, index) if tag else names_key(game),
            keys.attempts_key(game, slug, index),
            keys.entrants_key(game, slug, index),
            hidden_key(game, tag),
        ]

    def period_json(self) -> dict[str, Any]:
        return {
            "index": self.period.index,
            "starts_at": self.period.starts_at,
            "ends_at": self.period.ends_at,
            "status": self.status,
        }

    @property
    def final(self) -> bool:
        return self.status == FINAL


def _loaded(reply: Any) -> Any:
    if reply in ("load", b"load"):
        raise CountersNotFilled
    return reply


def _entries(view: StandingView, flat: list[Any]) -> list[dict[str, Any]]:
    """Flat replies (member, points, rank, name, attempts, ...) as the tournament's entries."""
    return [
        {
            "rank": int(flat[i + 2]),
            "player_id": flat[i],
            "display_name": flat[i + 3],
            "score": view.shown(int(flat[i + 1])),
            "attempts": int(flat[i + 4]),
            "reward": view.conf.reward(int(flat[i + 2])),
        }
        for i in range(0, len(flat), 5)
    ]


def top_call(view: StandingView, n: int, held: str = "") -> Call:
    """The top's call; `held`: the version of the copy the caller holds ("" for none)."""
    game, board = view.conf.game, keys.board_key(view.conf.game, view.conf.slug, view.period.index)
    # On a Redis Cluster the names (and their version) lie in another slot: the names are read
    # after the script there (`standing_select`), and nothing keeps a copy (the fast entrance
    # hands every cluster read to Django), so the board's version stands in for theirs.
    names_version = version_key(board) if on_cluster() else names_version_key(game)
    script_keys = [*view.keys(), version_key(board), names_version]
    return script_keys, [n, view.codec.time_span, view.conf.tie_rule, held]


def top_parse(view: StandingView, reply: Any) -> tuple[str, list[dict[str, Any]] | None]:
    """(version, entries), entries None when the caller's copy is current."""
    found = _loaded(reply)
    if len(found) == 1:
        return str(found[0]), None
    return str(found[0]), _entries(view, found[2:])


# The fast entrance's copies of tournament tops (competitions/fastpath.py), each at the version
# top.lua gave it, keyed by what else the answer holds: the tournament's configuration version
# (rewards), the period, its status by the clock, n.
top_cache = VersionedCache(maxsize=256)


def player_call(view: StandingView, player_id: str) -> Call:
    return view.keys(), [player_id, view.codec.time_span, view.conf.tie_rule]


def player_parse(view: StandingView, player_id: str, reply: Any) -> dict[str, Any] | None:
    """The player's standing; None when they are neither on the board nor entered."""
    found = _loaded(reply)
    if not found:
        return None
    points, rank, total, name, attempts = found
    return {
        "player_id": player_id,
        "display_name": name,
        "score": view.shown(int(points)) if points is not None else None,
        "rank": int(rank) if rank is not None else None,
        "total": int(total),
        "attempts": int(attempts),
        "max_attempts": view.conf.max_attempts,
        "reward": view.conf.reward(int(rank) if rank is not None else None),
    }


def around_call(view: StandingView, player_id: str, r: int) -> Call:
    return view.keys(), [player_id, r, view.codec.time_span, view.conf.tie_rule]


def around_parse(view: StandingView, reply: Any) -> list[dict[str, Any]] | None:
    found = _loaded(reply)
    return _entries(view, found[1:]) if found else None


def standing_select(
    tournament: Tournament, view: StandingView, script: str, call: Call, parse: Callable[[Any], Any]
) -> Any:
    """Django's side of a read: the script with `call`'s KEYS and ARGV, its reply given to `parse`;
    counters Redis has lost are filled from the database first (then read again). On a Redis
    Cluster, the period slot's copy of the hidden players is filled first when missing, and the
    display names are read from the game's names hash after the script."""
    cluster = on_cluster()
    if cluster:
        conf = view.conf
        hidden_slots_fill(game=conf.game, slots=(), whole=[keys.period_tag(conf.game, conf.slug, view.period.index)])
    for _ in range(3):
        reply = lua_script(script)(keys=call[0], args=call[1], client=boards_client())
        try:
            value = parse(reply)
        except CountersNotFilled:
            counters_fill(tournament=tournament, period=view.period)
            continue
        if cluster:
            _names_fill(view.conf.game, [value] if isinstance(value, dict) else value or [])
        return value
    raise CountersNotFilled


def _names_fill(game: str, entries: list[dict[str, Any]]) -> None:
    """The entries' display names, from the game's names hash (on a cluster, outside the period's slot)."""
    if entries:
        found = boards_client().hmget(names_key(game), [e["player_id"] for e in entries])
        for entry, name in zip(entries, found, strict=True):
            entry["display_name"] = name


def conf_publish_on_save(sender: Any, instance: Tournament, **kwargs: Any) -> None:
    """After a tournament's row is saved (the signed PUT, `end`, the admin): its copy for the fast
    entrance, once the save has committed (connected in apps.py)."""
    transaction.on_commit(lambda: conf_publish(conf_of(instance)), robust=True)
