"""A league cohort's live push (docs/api.md, "Leagues"): the whole cohort, as the cohort read
answers it, pushed to its WebSocket connections (consumers.py `LeagueCohortConsumer`) on change,
at most once a second each: the tournaments' machinery (live.py), with a cohort's board.

The board writer marks a cohort's board as changed in the live publisher's set like every board
(boards.writer `boards_touched`: the worker's apply); the period's end marks each cohort it froze
(scoring/league_closing.py), so the final cohort is pushed too. The boards' publisher hands those
keys to `PUSHES` (registered in apps.py), which reads each cohort as the cohort read does
(league_reads.py `cohort_view`: live from Redis, frozen from PostgreSQL) and sends it to the
cohort's group. The publisher sends a cohort only when its message differs from the last sent.

A period's status changes with the clock too (active, then grace at its end) with no change to the
board: each connection reads its cohort again by itself at that moment (`Snapshot.next_look`).

A large league has tens of thousands of cohorts, most of them followed by nobody: each connection
counts itself in its period's watch hash (league_keys.py `watch_key`, "D:N" -> connections), and
the publisher reads only the changed cohorts counted there (one HMGET per period). A process that
dies leaves its counts behind: that costs reads of cohorts nobody follows, until the hash expires
with the period's other keys.
"""

import hashlib
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from boards import events
from boards.events import Push, PushSource
from common.redis import boards_client
from common.shapes import shape_of
from seasons.selectors import game_get

from . import league_keys as keys
from .league_assign import keys_expire_at
from .league_models import League
from .league_periods import league_period
from .league_reads import CohortRef, cohort_find, cohort_view
from .league_selectors import league_get
from .league_serializers import CohortSerializer
from .periods import ACTIVE

JITTER_S = 0.5  # connections that look at once spread over this (a period's end: every connection)
_render = shape_of(CohortSerializer)  # times as the REST read shows them


def cohort_group(game: str, league: str, cohort: str) -> str:
    """The group of a cohort's connections (ASCII, < 100 characters)."""
    return "lc." + hashlib.sha1(f"{game}:{league}:{cohort}".encode()).hexdigest()[:24]


def cohort_text(view: dict[str, Any]) -> str:
    """A push: `{"type": "cohort", "id", "league", "period", "division", "final", "entries"}`, the
    cohort as the cohort read answers it."""
    return events.top_text({"type": "cohort", **_render(view)})


@dataclass(frozen=True)
class Snapshot:
    """What a connection shows now, when to look again (None: nothing changes by the clock), and
    where it counts itself as a follower (the period's watch hash and the cohort's field)."""

    text: str
    next_look: datetime | None
    watch: tuple[str, str, int]  # key, field, expiry (Unix seconds)


def cohort_watch(watch: tuple[str, str, int], delta: int) -> None:
    """Count a connection in (+1) or out (-1) of its cohort's followers."""
    key, cohort_field, expire_at = watch
    pipe = boards_client().pipeline(transaction=False)
    pipe.hincrby(key, cohort_field, delta)
    pipe.expireat(key, expire_at)
    pipe.execute()


def cohort_snapshot(*, game: str, slug: str, cohort: str, now: datetime) -> Snapshot | None:
    """The cohort's message now; None for an unknown game, league or cohort."""
    found = game_get(slug=game)
    league = league_get(game=found, slug=slug) if found is not None else None
    ref = cohort_find(league=league, text=cohort) if league is not None else None
    if ref is None:
        return None
    view = cohort_view(ref, now)
    later = None
    if view["period"]["status"] == ACTIVE:  # its end turns it to grace
        later = ref.period.ends_at + timedelta(seconds=random.uniform(0, JITTER_S))
    watch = (
        keys.watch_key(ref.league.game.slug, ref.league.slug, ref.period.index),
        f"{ref.division}:{ref.number}",
        keys_expire_at(ref.period),
    )
    return Snapshot(text=cohort_text(view), next_look=later, watch=watch)


def _followed(
    parsed: list[tuple[str, tuple[str, str, int, int, int]]],
) -> list[tuple[str, tuple[str, str, int, int, int]]]:
    """The changed cohorts someone follows: one HMGET of each period's watch hash."""
    by_period: dict[tuple[str, str, int], list[tuple[str, tuple[str, str, int, int, int]]]] = defaultdict(list)
    for item in parsed:
        game, slug, index, _, _ = item[1]
        by_period[(game, slug, index)].append(item)
    pipe = boards_client().pipeline(transaction=False)
    for (game, slug, index), items in by_period.items():
        pipe.hmget(keys.watch_key(game, slug, index), [f"{d}:{n}" for _, (_, _, _, d, n) in items])
    followed = []
    for items, counts in zip(by_period.values(), pipe.execute(), strict=True):
        followed += [item for item, count in zip(items, counts, strict=True) if count and int(count) > 0]
    return followed


def cohort_pushes(board_keys: list[str], now: datetime) -> list[Push]:
    """The publisher's pushes of changed cohort boards (boards/events.py `PushSource`)."""
    pushes = []
    leagues: dict[tuple[str, str], League | None] = {}
    parsed = [(key, found) for key in board_keys if (found := keys.cohort_board_key_parse(key)) is not None]
    for key, (game, slug, index, division, number) in _followed(parsed):
        if (game, slug) not in leagues:
            leagues[(game, slug)] = League.objects.select_related("game").filter(game__slug=game, slug=slug).first()
        league = leagues[(game, slug)]
        period = league_period(league, index) if league is not None else None
        if league is None or period is None or division >= len(league.divisions):
            continue
        ref = CohortRef(league, period, division, number)
        pushes.append(
            Push(
                key=key,
                text=cohort_text(cohort_view(ref, now)),
                groups=(cohort_group(game, slug, ref.id),),
                period=index,
            )
        )
    return pushes


PUSHES = PushSource(owns=lambda key: keys.cohort_board_key_parse(key) is not None, pushes=cohort_pushes)
