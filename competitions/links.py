"""The game page's tournaments (boards/pages.py `GameLinks`): links to the active ones (soonest end
first) and the upcoming ones (soonest start first), on the game's board page from both entrances;
then links to the game's leagues (their pages, league_pages.py).

Both read one document per game from Redis (keys.links_key): the title and window of each of the
game's tournaments that has not ended, and each league's id and title, written from the database
after every save or deletion of a tournament or a league (once committed: apps.py) and by Django's
page when Redis has none. It expires (LINKS_TTL_S), so a write that raced another's and lost is
gone soon after. Which tournaments are active or upcoming is worked out from the clock (periods.py)
at each request; the HTML is kept in the process until the first moment it would change.
"""

import html
import threading
from datetime import datetime, timedelta
from typing import Any

import orjson
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from boards.pages import GameLinks
from common.formats import iso
from common.redis import client

from . import keys
from .league_models import League
from .models import Tournament
from .periods import Schedule, period_holding, period_next

LINKS_TTL_S = 120
MAX_TOURNAMENTS = 100  # in the document: the first to start among those not ended
MAX_LINKS = 10  # on the page
KEPT_HTML = 256
_FIELDS = ("slug", "title", "starts_at", "ends_at", "duration_s", "reset", "grace_s", "ended_at")
_TIMES = ("starts_at", "ends_at", "ended_at")
_kept: dict[str, tuple[datetime, datetime, str]] = {}  # document -> (from, until, its HTML)
_kept_lock = threading.Lock()


def links_fill(game: str) -> str:
    """The game's document written from the database; returns it."""
    now = timezone.now()
    running = (
        Tournament.objects.filter(game__slug=game)
        .filter(Q(ends_at__isnull=True) | Q(ends_at__gt=now))
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=now))
        .order_by("starts_at", "slug")
        .values(*_FIELDS)[:MAX_TOURNAMENTS]
    )
    rows = []
    for row in running:
        rows.append(
            {name: (iso(value) if name in _TIMES and value is not None else value) for name, value in row.items()}
        )
    leagues = list(League.objects.filter(game__slug=game).order_by("slug").values("slug", "title")[:MAX_LINKS])
    document = orjson.dumps({"game": game, "tournaments": rows, "leagues": leagues}).decode()
    client().set(keys.links_key(game), document, ex=LINKS_TTL_S)
    return document


def links_html(document: str | None, now: datetime) -> str | None:
    """The links' HTML from the game's document (None without one); kept while it holds."""
    if document is None:
        return None
    kept = _kept.get(document)
    if kept is not None and kept[0] <= now < kept[1]:
        return kept[2]
    text, until = _links_render(orjson.loads(document), now)
    with _kept_lock:
        if len(_kept) >= KEPT_HTML:
            _kept.clear()
        _kept[document] = (now, until, text)
    return text


def _links_render(document: dict[str, Any], now: datetime) -> tuple[str, datetime]:
    """(the HTML, the first moment it changes: a period's start or end)."""
    active: list[tuple[datetime, dict[str, Any]]] = []
    upcoming: list[tuple[datetime, dict[str, Any]]] = []
    for row in document["tournaments"]:
        ends_at, ended_at = (datetime.fromisoformat(row[name]) if row[name] else None for name in _TIMES[1:])
        starts_at = datetime.fromisoformat(row["starts_at"])
        schedule = Schedule(starts_at, ends_at, row["duration_s"], row["reset"], row["grace_s"], ended_at)
        holding = period_holding(schedule, now)
        if holding is not None:
            active.append((holding.ends_at, row))
            continue
        nxt = period_next(schedule, now)
        if nxt is not None:
            upcoming.append((nxt.starts_at, row))
    active.sort(key=lambda found: found[0])
    upcoming.sort(key=lambda found: found[0])
    until = min([moment for moment, _ in active + upcoming], default=now + timedelta(days=1))
    shown = [("active", "ends", moment, row) for moment, row in active]
    shown += [("upcoming", "starts", moment, row) for moment, row in upcoming]
    game = html.escape(document["game"])
    leagues = _leagues_html(game, document.get("leagues") or [])
    if not shown:
        return leagues, until
    items = "".join(
        f'<li class="{state}"><a href="/games/{game}/tournaments/{html.escape(row["slug"])}/">'
        f'{html.escape(row["title"])}</a> <span class="when">{state}, {verb} '
        f'<time datetime="{iso(moment)}">{moment:%Y-%m-%d %H:%M} UTC</time></span></li>'
        for state, verb, moment, row in shown[:MAX_LINKS]
    )
    return (
        f'<nav id="tournaments" class="tournaments" aria-label="Tournaments"><h2>Tournaments</h2><ul>{items}</ul></nav>'
        + leagues
    ), until


def _leagues_html(game: str, leagues: list[dict[str, Any]]) -> str:
    """The game's leagues: a link to each one's page (which asks for the player)."""
    if not leagues:
        return ""
    items = "".join(
        f'<li><a href="/games/{game}/leagues/{html.escape(row["slug"])}/">{html.escape(row["title"])}</a></li>'
        for row in leagues
    )
    return f'<nav id="leagues" class="tournaments" aria-label="Leagues"><h2>Leagues</h2><ul>{items}</ul></nav>'


def links_refresh_on_change(sender: Any, instance: Tournament | League, **kwargs: Any) -> None:
    """After a tournament's or a league's row is saved or deleted: its game's document written again, once the
    change has committed (connected in apps.py)."""
    game = instance.game.slug
    transaction.on_commit(lambda: links_fill(game), robust=True)


GAME_LINKS = GameLinks(key=keys.links_key, html=links_html, fill=links_fill)
