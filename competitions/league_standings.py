"""A live league cohort, read: the cohort read and the player read of a period that is not final,
for both entrances (docs/api.md, "Leagues").

Both read a cohort with one call of lua/league_cohort.lua and shape its reply with the functions
here, so they answer the same entries: Django's view (league_reads.py) with the seat it found in
PostgreSQL, the fast entrance (league_fastpath.py) with the seat the script looks up in the
period's assignment state (league_keys.py: the player map and the counters the assignment writes).

`LeagueConf` is what a read needs of a league and its game. Django builds it from the row; the fast
entrance from its copy in Redis (`conf_publish`, written after every save of the row, and again by
a Django read that finds it missing or older), checked in the read's own call: its version (the
row's `updated_at` in microseconds, with the game's tie rule) comes back in front of the reply.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from django.db import transaction

from boards.codec import ScoreCodec
from boards.keys import epoch_micros, hidden_key, names_key
from boards.ranking import Ranker
from common.redis import boards_client, lua_path, lua_script, on_cluster

from . import league_keys as keys
from .league_boards import cohort_id, cohort_time_bits
from .league_models import League
from .league_periods import league_schedule
from .periods import Period, Schedule

COHORT_SCRIPT = lua_path(__file__, "league_cohort.lua")
PROMOTE, STAY, DEMOTE = "promote", "stay", "demote"
Call = tuple[list[str], list[Any]]  # the script's KEYS and ARGV


class StateNotFilled(RuntimeError):
    """The period's assignment state is not in Redis (a flush, or nobody has played yet)."""


@dataclass(frozen=True)
class LeagueConf:
    """What a cohort read needs of a league and its game."""

    game: str
    slug: str
    version: str
    tie_rule: str
    starts_at: datetime
    reset: str
    cohort_size: int
    divisions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def schedule(self) -> Schedule:
        return league_schedule(starts_at=self.starts_at, reset=self.reset)

    @property
    def division_names(self) -> list[str]:
        return [d["name"] for d in self.divisions]


def conf_of(league: League) -> LeagueConf:
    tie_rule = league.game.tie_rule
    return LeagueConf(
        game=league.game.slug,
        slug=league.slug,
        version=f"{epoch_micros(league.updated_at)}.{tie_rule}",
        tie_rule=tie_rule,
        starts_at=league.starts_at,
        reset=league.reset,
        cohort_size=league.cohort_size,
        divisions=[dict(d) for d in league.divisions],
    )


def conf_parse(raw: bytes | str) -> LeagueConf:
    doc = orjson.loads(raw)
    doc["starts_at"] = datetime.fromisoformat(doc["starts_at"])
    return LeagueConf(**doc)


def conf_publish(conf: LeagueConf) -> None:
    """The fast entrance's copy of the league (its document and version, in one transaction)."""
    doc = {name: getattr(conf, name) for name in LeagueConf.__dataclass_fields__}
    doc["starts_at"] = conf.starts_at.isoformat()
    pipe = boards_client().pipeline(transaction=True)
    pipe.set(keys.conf_key(conf.game, conf.slug), orjson.dumps(doc))
    pipe.set(keys.conf_version_key(conf.game, conf.slug), conf.version)
    pipe.execute()


def conf_current(league: League) -> LeagueConf:
    """The league's read configuration; its copy in Redis written again when missing or older."""
    conf = conf_of(league)
    if boards_client().get(keys.conf_version_key(conf.game, conf.slug)) != conf.version:
        conf_publish(conf)
    return conf


def conf_publish_on_save(sender: Any, instance: League, **kwargs: Any) -> None:
    """After a league's row is saved (the signed PUT, the admin): its copy for the fast entrance,
    once the save has committed (connected in apps.py)."""
    transaction.on_commit(lambda: conf_publish(conf_of(instance)), robust=True)


def zone_counts(conf: LeagueConf | League, division: int, n: int) -> tuple[int, int]:
    """(players promoted, players demoted) of a cohort of n players in this division, as the
    period's end decides them: floor(promote x n / cohort_size), floor(demote x n / cohort_size)."""
    rules = conf.divisions[division]
    return rules["promote"] * n // conf.cohort_size, rules["demote"] * n // conf.cohort_size


def zone_of(position: int, n: int, up: int, down: int) -> str:
    if position < up:
        return PROMOTE
    if position >= n - down:
        return DEMOTE
    return STAY


def cohort_call(conf: LeagueConf, index: int, *, player_id: str = "", seat: tuple[int, int] | None = None) -> Call:
    """The script's call, checked against the period's state: a player's cohort (`player_id`: the
    seat looked up there) or one cohort (`seat`, (division, number): it must have a member)."""
    game, slug = conf.game, conf.slug
    script_keys = [
        keys.members_key(game, slug, index),
        keys.state_key(game, slug, index),
        hidden_key(game),
        names_key(game),
    ]
    wanted = f"{seat[0]}:{seat[1]}" if seat is not None else ""
    return script_keys, [player_id, wanted, keys.cohort_board_template(game, slug, index), "1"]


def cohort_call_decided(conf: LeagueConf, index: int, seat: tuple[int, int]) -> Call:
    """The script's call for a cohort whose seat the caller found in PostgreSQL (no state check)."""
    script_keys, args = cohort_call(conf, index, seat=seat)
    return script_keys, [*args[:3], "0"]


def cohort_parse(reply: Any) -> tuple[tuple[int, int] | None, list[Any]]:
    """(the seat (division, number), or None without one; the flat members) of a reply."""
    if reply in ("load", b"load"):
        raise StateNotFilled
    seat = reply[0]
    if not seat:
        return None, []
    division, number = str(seat).split(":")
    return (int(division), int(number)), list(reply[1:])


def cohort_entries(conf: LeagueConf, period: Period, division: int, flat: list[Any]) -> list[dict[str, Any]]:
    """The cohort's entries from the script's flat reply (member, encoded score, name): in the tie
    rule's display order (score, then who reached it first, then player id), ranked by the game's
    tie rule, each with its zone."""
    found = [(str(flat[i]), int(float(flat[i + 1])), flat[i + 2] or None) for i in range(0, len(flat), 3)]
    found.sort(key=lambda item: (-item[1], item[0]))
    codec = ScoreCodec(cohort_time_bits(period))
    ranker = Ranker(conf.tie_rule)
    up, down = zone_counts(conf, division, len(found))
    entries = []
    for position, (player_id, encoded, name) in enumerate(found):
        points = codec.points(encoded)
        entries.append(
            {
                "rank": ranker.rank(points),
                "player_id": player_id,
                "display_name": name,
                "score": points,
                "zone": zone_of(position, len(found), up, down),
            }
        )
    return entries


def cohort_select(conf: LeagueConf, period: Period, seat: tuple[int, int]) -> list[dict[str, Any]]:
    """Django's side: the entries of the cohort whose seat it found in PostgreSQL. On a Redis
    Cluster the board, the hidden players and the names lie in different slots: read one by one."""
    redis = boards_client()
    if on_cluster():
        board = keys.cohort_board_key(conf.game, conf.slug, period.index, *seat)
        raw: list[Any] = list(redis.zrange(board, 0, -1, withscores=True))
        members = [str(member) for member, _ in raw]
        hidden = redis.smismember(hidden_key(conf.game), members) if members else []
        names = redis.hmget(names_key(conf.game), members) if members else []
        flat: list[Any] = []
        for (member, score), gone, name in zip(raw, hidden, names, strict=True):
            if not gone:
                flat += [str(member), score, name]
    else:
        script_keys, args = cohort_call_decided(conf, period.index, seat)
        _, flat = cohort_parse(lua_script(COHORT_SCRIPT)(keys=script_keys, args=args, client=redis))
    return cohort_entries(conf, period, seat[0], flat)


def period_json(period: Period, status: str) -> dict[str, Any]:
    return {"index": period.index, "starts_at": period.starts_at, "ends_at": period.ends_at, "status": status}


def cohort_present(
    conf: LeagueConf,
    period: Period,
    status: str,
    seat: tuple[int, int],
    entries: list[dict[str, Any]],
    *,
    final: bool = False,
) -> dict[str, Any]:
    """The cohort read's answer (and a player read's `cohort`)."""
    name = conf.divisions[seat[0]]["name"]
    return {
        "id": cohort_id(period=period.index, division_name=name, number=seat[1]),
        "league": conf.slug,
        "period": period_json(period, status),
        "division": name,
        "final": final,
        "entries": entries,
    }
