"""A tournament's live board (docs/api.md, "Tournaments"): its period's top 10 pushed to the
WebSocket connections (consumers.py) as the season boards' are (boards/events.py), at most once a
second each.

The board writer marks a period's board as changed in the same set as the season boards
(boards.writer `boards_touched`: the worker's apply, and the rewrites from the ledger of
scoring/entries.py); the boards' publisher hands those keys to `PUSHES` (registered in apps.py),
which reads each period's top 10 as the top read does (tops.py) and sends it to the period's group
(the connections that named it) and, when it is the period the tournament's reads default to (the
active one, else the last that started, else the first), to the tournament's follow group.

A period's status changes with the clock too (upcoming, active, grace, final), with no change to
its board: each connection looks at its board again by itself at those moments (`next_look`), and
a follower when the next period starts.
"""

import hashlib
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from boards import events
from boards.events import Push, PushSource
from boards.writer import boards_touched
from common.shapes import shape_of
from seasons.selectors import game_get

from . import keys, standings
from .models import Tournament
from .periods import ACTIVE, GRACE, UPCOMING, period_next
from .selectors import tournament_get
from .serializers import StandingTopSerializer
from .services import schedule_of
from .standings import StandingView, UnknownPeriod
from .tops import standing_top

FIRST_RECHECK_S = 5.0  # past its grace and not frozen yet: looked at again after this, then less often
MAX_RECHECK_S = 600.0
JITTER_S = 0.5  # connections that look at once spread over this (a period's end: every connection)
_render_top = shape_of(StandingTopSerializer)  # times as the REST read shows them


def period_group(game: str, tournament: str, index: int) -> str:
    """The group of the connections that named a period (ASCII, < 100 characters)."""
    return "tp." + hashlib.sha1(f"{game}:{tournament}:{index}".encode()).hexdigest()[:24]


def follow_group(game: str, tournament: str) -> str:
    """The group of the connections following a tournament's current period."""
    return "tf." + hashlib.sha1(f"{game}:{tournament}".encode()).hexdigest()[:24]


def live_text(view: StandingView, entries: list[dict[str, Any]]) -> str:
    """A push: `{"type": "top", "tournament", "period": {"index", "starts_at", "ends_at", "status"},
    "entries"}`, the period and entries as in the top read."""
    answer = _render_top(
        {"tournament": view.conf.slug, "period": view.period_json(), "final": False, "entries": entries}
    )
    message = {
        "type": "top",
        "tournament": answer["tournament"],
        "period": answer["period"],
        "entries": answer["entries"],
    }
    return events.top_text(message)


def next_look(*, tournament: Tournament, view: StandingView, following: bool, now: datetime) -> datetime | None:
    """When a connection showing `view` looks at its board again by itself: when the period's
    status changes by the clock (its start, its end, the end of its grace; past that, until its
    standings are frozen, after 5 s, then after half the time since), and for a follower when the
    next period starts. None: nothing will change by the clock."""
    period = view.period
    moments = []
    if view.status == UPCOMING:
        moments.append(period.starts_at)
    elif view.status == ACTIVE:
        moments.append(period.ends_at)
    elif view.status == GRACE:
        past = (now - period.closes_at).total_seconds()
        wait = FIRST_RECHECK_S if past < FIRST_RECHECK_S else min(MAX_RECHECK_S, past / 2)
        moments.append(period.closes_at if past < 0 else now + timedelta(seconds=wait))
    if following:
        nxt = period_next(schedule_of(tournament), now)
        if nxt is not None:
            moments.append(nxt.starts_at)
    if not moments:
        return None
    return min(moments) + timedelta(seconds=random.uniform(0, JITTER_S))


@dataclass(frozen=True)
class Snapshot:
    """What a connection shows now: the period, its message, and when to look again."""

    index: int
    text: str
    next_look: datetime | None


def live_snapshot(*, game: str, slug: str, index: int | None, now: datetime) -> Snapshot | None:
    """The top 10 of the tournament's period `index` (None: the current one); None for an unknown
    game, tournament or period."""
    found = game_get(slug=game)
    tournament = tournament_get(game=found, slug=slug) if found is not None else None
    if tournament is None:
        return None
    try:
        view, entries = standing_top(tournament=tournament, index=index, n=events.LIVE_TOP_N, now=now)
    except UnknownPeriod:
        return None
    later = next_look(tournament=tournament, view=view, following=index is None, now=now)
    return Snapshot(index=view.period.index, text=live_text(view, entries), next_look=later)


def tournament_pushes(board_keys: list[str], now: datetime) -> list[Push]:
    """The publisher's pushes of changed period boards (boards/events.py `PushSource`)."""
    pushes = []
    tournaments: dict[tuple[str, str], Tournament | None] = {}
    for key in board_keys:
        parsed = keys.board_key_parse(key)
        if parsed is None:
            continue
        game, slug, index = parsed
        if (game, slug) not in tournaments:
            tournaments[(game, slug)] = (
                Tournament.objects.select_related("game").filter(game__slug=game, slug=slug).first()
            )
        tournament = tournaments[(game, slug)]
        if tournament is None:
            continue
        try:
            view, entries = standing_top(tournament=tournament, index=index, n=events.LIVE_TOP_N, now=now)
            current = standings.period_of(view.conf, None, now).index == index
        except UnknownPeriod:
            continue
        groups = (period_group(game, slug, index), *((follow_group(game, slug),) if current else ()))
        pushes.append(Push(key=key, text=live_text(view, entries), groups=groups, period=index))
    return pushes


def live_refresh_on_save(sender: Any, instance: Tournament, **kwargs: Any) -> None:
    """After a tournament's row is saved (`end`, a new `ends_at`, the admin), its current period's
    board counts as changed once the save has committed, so its connections are sent the period's
    new window (connected in apps.py)."""
    game, slug = instance.game.slug, instance.slug

    def touch() -> None:
        try:
            index = standings.period_of(standings.conf_of(instance), None, timezone.now()).index
        except UnknownPeriod:
            return
        boards_touched([keys.board_key(game, slug, index)])

    transaction.on_commit(touch, robust=True)


PUSHES = PushSource(owns=lambda key: keys.board_key_parse(key) is not None, pushes=tournament_pushes)
