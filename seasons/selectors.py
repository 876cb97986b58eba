"""Reads for games and seasons: which season a result or a reader means."""

import time
from datetime import datetime

from .models import Game, Season


def game_get(*, slug: str) -> Game | None:
    return Game.objects.filter(slug=slug).first()


_catalog: dict[str, tuple[float, Game | None, list[Season]]] = {}


def game_catalog(*, slug: str, max_age_s: float = 2.0) -> tuple[Game | None, list[Season]]:
    """A game and its seasons for the read path, cached in-process for `max_age_s`.

    Reads ask for these on every request; two queries would cost more than the Redis read they
    serve. Writes never use this: a season frozen a moment ago must refuse results at once.
    """
    now = time.monotonic()
    hit = _catalog.get(slug)
    if hit is not None and hit[0] > now:
        return hit[1], hit[2]
    game = game_get(slug=slug)
    seasons = seasons_of(game=game) if game is not None else []
    _catalog[slug] = (now + max_age_s, game, seasons)
    return game, seasons


def catalog_clear() -> None:
    _catalog.clear()


def seasons_of(*, game: Game) -> list[Season]:
    """Newest first."""
    return list(Season.objects.filter(game=game).order_by("-starts_at", "-id"))


def season_containing(*, seasons: list[Season], played_at: datetime) -> Season | None:
    for season in seasons:
        if season.contains(played_at):
            return season
    return None


def season_current(*, game: Game, now: datetime, seasons: list[Season] | None = None) -> Season | None:
    """The season whose window holds `now`; else the latest one that has started; else the next."""
    seasons = seasons if seasons is not None else seasons_of(game=game)
    containing = season_containing(seasons=seasons, played_at=now)
    if containing is not None:
        return containing
    started = [s for s in seasons if s.starts_at <= now]
    if started:
        return max(started, key=lambda s: s.starts_at)
    return min(seasons, key=lambda s: s.starts_at) if seasons else None
