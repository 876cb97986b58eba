"""Reads for games and seasons: which season a result or a reader means. (The read path takes
its games and seasons from the catalog in Redis: catalog.py.)"""

from collections.abc import Iterable
from datetime import datetime, timedelta

from common.db import models_where

from .models import Game, Season, SeasonPointer


def game_get(*, slug: str) -> Game | None:
    """Read by every submission (fixed SQL, not a queryset: see common/db.py)."""
    found = models_where(Game, "t.slug = %s", [slug])
    return found[0] if found else None


def games_all() -> list[Game]:
    return list(Game.objects.all())


def games_by_id(*, game_ids: Iterable[int]) -> dict[int, Game]:
    return Game.objects.in_bulk(list(game_ids))


def frozen_season_ids() -> set[int]:
    """Seasons read from their frozen standings (no live boards)."""
    return set(Season.objects.filter(frozen_at__isnull=False).values_list("id", flat=True))


def seasons_of(*, game: Game) -> list[Season]:
    """Newest first, each with `game` as its game. Read by every submission (fixed SQL, not a
    queryset: see common/db.py)."""
    seasons = models_where(Season, "t.game_id = %s", [game.id], order_by="t.starts_at DESC, t.id DESC")
    for season in seasons:
        season.game = game
    return seasons


def season_get(*, season_id: int) -> Season | None:
    return Season.objects.select_related("game").filter(pk=season_id).first()


def seasons_by_id(*, season_ids: Iterable[int]) -> dict[int, Season]:
    """Seasons with their games, by id."""
    return {s.id: s for s in Season.objects.filter(id__in=list(season_ids)).select_related("game")}


def season_shards(*, game: Game) -> dict[int, int]:
    """How many ways each season of the game splits its boards (Season.board_shards), by id."""
    return dict(Season.objects.filter(game=game).values_list("id", "board_shards"))


def season_lock(*, season_id: int) -> Season:
    """The season with its game, its row locked until the transaction ends (one freezer at a time)."""
    return Season.objects.select_for_update().select_related("game").get(pk=season_id)


def seasons_to_freeze(*, now: datetime) -> list[int]:
    """Seasons whose grace has ended and whose boards are not frozen yet."""
    return [s.id for s in Season.objects.filter(frozen_at__isnull=True) if s.closes_at <= now]


def seasons_to_archive(*, now: datetime, keys_ttl_s: int) -> list[Season]:
    """Frozen seasons whose Redis keys have had their time (`keys_ttl_s` since the freeze)."""
    before = now - timedelta(seconds=keys_ttl_s)
    return list(Season.objects.filter(archived_at__isnull=True, frozen_at__lte=before).select_related("game"))


def season_containing(*, seasons: list[Season], played_at: datetime) -> Season | None:
    for season in seasons:
        if season.contains(played_at):
            return season
    return None


_UNSET = -1


def season_current(
    *, game: Game, now: datetime, seasons: list[Season] | None = None, pointer_id: int | None = _UNSET
) -> Season | None:
    """The game's season pointer (see SeasonPointer); without one, the season whose window holds
    `now`, else the latest one that has started, else the next."""
    seasons = seasons if seasons is not None else seasons_of(game=game)
    pointer = (
        SeasonPointer.objects.filter(game=game).values_list("season_id", flat=True).first()
        if pointer_id == _UNSET
        else pointer_id
    )
    if pointer is not None:
        found = next((s for s in seasons if s.id == pointer), None)
        if found is not None:
            return found
    containing = season_containing(seasons=seasons, played_at=now)
    if containing is not None:
        return containing
    started = [s for s in seasons if s.starts_at <= now]
    if started:
        return max(started, key=lambda s: s.starts_at)
    return min(seasons, key=lambda s: s.starts_at) if seasons else None
