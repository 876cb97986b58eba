"""Writes for games and seasons: creating them, ending a season, the lifecycle's states and the
season pointer. Nothing here touches a board: freezing a season's boards happens above this app
(scoring/freezing.py), on seasons whose grace has ended.

Every change publishes the game's catalog for the read path (catalog.py) once its own transaction
is over; a caller that holds an outer transaction around a change publishes after it commits.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cronsim import CronSim
from django.db import transaction
from django.db.models import Q

from .catalog import catalog_publish
from .models import Game, Season, SeasonPointer, SeasonPointerChange, TieRule

DEFAULT_SEASON_DAYS = 90
DEFAULT_GRACE_S = 3600


def time_bits_for_window(window_s: int) -> int:
    """Bits needed to hold every whole second in [0, window_s]: a season's clock resolution on
    its boards (boards/codec.py packs the reach second into the low bits of each score)."""
    if window_s < 0:
        raise ValueError("window must be non-negative")
    return max(1, int(window_s).bit_length())


def season_create(
    *, game: Game, starts_at: datetime, days: float, grace_s: int = DEFAULT_GRACE_S, name: str | None = None
) -> Season:
    if days <= 0:
        raise ValueError("a season lasts a positive number of days")
    # Whole seconds: played_at has whole seconds, so a result in the season's first second counts.
    starts_at = starts_at.replace(microsecond=0)
    ends_at = starts_at + timedelta(days=days)
    window_s = int((ends_at - starts_at).total_seconds()) + grace_s
    number = game.seasons.count() + 1
    season = Season.objects.create(
        game=game,
        name=name or f"Season {number}",
        starts_at=starts_at,
        ends_at=ends_at,
        grace_s=grace_s,
        time_bits=time_bits_for_window(window_s),
        board_shards=game.board_shards,
    )
    catalog_publish(slug=game.slug)
    return season


def game_create(
    *,
    slug: str,
    name: str,
    tie_rule: str = TieRule.COMPETITION,
    max_points_per_match: int = 10_000,
    ascending: bool = False,
    season_start: datetime,
    season_days: float = DEFAULT_SEASON_DAYS,
    board_shards: int = 1,
) -> tuple[Game, Season]:
    """Create a game and its first season, open from `season_start` for `season_days` days, its
    boards split by player across `board_shards` sorted sets."""
    if tie_rule not in TieRule.values:
        raise ValueError(f"tie rule must be one of {', '.join(TieRule.values)}")
    if max_points_per_match < 0:
        raise ValueError("max points per match must be >= 0")
    with transaction.atomic():
        game = Game(
            slug=slug,
            name=name,
            tie_rule=tie_rule,
            max_points_per_match=max_points_per_match,
            ascending=ascending,
            board_shards=board_shards,
        )
        game.full_clean()
        game.save()
        season = season_create(game=game, starts_at=season_start, days=season_days)
        pointer_set(game=game, season=season, actor="create_game")
    catalog_publish(slug=game.slug)
    return game, season


@dataclass(frozen=True)
class SeasonEnded:
    season: Season
    status: str
    next_season: Season | None


def season_end(*, game: Game, now: datetime, grace_s: int | None = None, start_next: bool = True) -> SeasonEnded:
    """End the game's current season now (docs/api.md, `end_season`).

    Results played before the end still count during the grace window (the season's own unless
    `grace_s` is given); once it is over the season's boards are frozen (by the caller at once
    for grace 0, else by the beat). A new season of the same length starts at once unless
    `start_next` is False or one is already scheduled. Locks the season row.
    """
    end = now.replace(microsecond=0)
    with transaction.atomic():
        season = (
            Season.objects.select_for_update()
            .filter(game=game, starts_at__lte=end, ends_at__gt=end, frozen_at__isnull=True)
            .order_by("-starts_at")
            .first()
        )
        if season is None:
            raise ValueError(f"{game.slug} has no active season to end")
        length = season.ends_at - season.starts_at
        season.ends_at = max(end, season.starts_at + timedelta(seconds=1))
        if grace_s is not None:
            if grace_s < 0:
                raise ValueError("grace must be >= 0 seconds")
            season.grace_s = grace_s
        season.save(update_fields=["ends_at", "grace_s"])
        next_season = None
        if start_next:
            next_season = Season.objects.filter(game=game, starts_at__gte=season.ends_at).order_by("starts_at").first()
            if next_season is None:
                next_season = season_create(
                    game=game, starts_at=season.ends_at, days=length.total_seconds() / 86400, grace_s=DEFAULT_GRACE_S
                )
    if next_season is not None and next_season.starts_at <= now:
        pointer_set(game=game, season=next_season, actor="end_season")
    catalog_publish(slug=game.slug)
    return SeasonEnded(season=season, status=season.status_at(now), next_season=next_season)


def season_mark_frozen(*, season: Season, now: datetime) -> None:
    """Record the freeze; call in the transaction that stored the standings, holding the season's
    row lock (`seasons.selectors.season_lock`), and publish the catalog after it commits."""
    season.frozen_at = now
    season.frozen_tiers = Game.objects.filter(pk=season.game_id).values_list("tiers", flat=True)[0] or {}
    season.save(update_fields=["frozen_at", "frozen_tiers"])


def season_mark_archived(*, season_id: int, now: datetime) -> bool:
    """Record that a frozen season's keys are gone; False when it was archived already."""
    archived = bool(Season.objects.filter(pk=season_id, archived_at__isnull=True).update(archived_at=now))
    if archived:
        catalog_publish(slug=Game.objects.filter(seasons__id=season_id).values_list("slug", flat=True)[0])
    return archived


def schedule_next_end(*, cron: str, start: datetime) -> datetime:
    """The first boundary of a cron schedule (UTC) strictly after `start`."""
    return next(CronSim(cron, start.astimezone(UTC)))


def seasons_schedule_next(*, now: datetime) -> list[Season]:
    """For games with a season schedule (every N days, or a cron expression of boundaries): start
    the next season, contiguous with the last one, when the last one has ended."""
    created = []
    games = Game.objects.filter(Q(season_schedule_days__isnull=False) | ~Q(season_schedule_cron=""))
    for game in games:
        latest = Season.objects.filter(game=game).order_by("-ends_at").first()
        if latest is None or latest.ends_at > now:
            continue
        if game.season_schedule_cron:
            end = schedule_next_end(cron=game.season_schedule_cron, start=latest.ends_at)
            days = (end - latest.ends_at).total_seconds() / 86400
        else:
            days = float(game.season_schedule_days or 0)
        created.append(season_create(game=game, starts_at=latest.ends_at, days=days))
    return created


def pointers_advance(*, now: datetime) -> int:
    """Move each game's pointer to the season that holds `now`, when it points at an earlier one
    that has ended (rotation). A pointer an operator rolled back to a still-open season stays."""
    moved = 0
    for pointer in SeasonPointer.objects.select_related("season", "game"):
        if pointer.season.ends_at > now:
            continue
        current = (
            Season.objects.filter(game=pointer.game, starts_at__lte=now, ends_at__gt=now).order_by("-starts_at").first()
        )
        if current is not None and current.starts_at >= pointer.season.ends_at:
            pointer_set(game=pointer.game, season=current, actor="rotation")
            moved += 1
    return moved


def pointer_set(*, game: Game, season: Season, actor: str, reason: str = "") -> SeasonPointer:
    """Point readers at `season` (a new version, recorded). Locks the pointer row."""
    if season.game_id != game.id:
        raise ValueError("that season belongs to another game")
    with transaction.atomic():
        pointer = SeasonPointer.objects.select_for_update().filter(game=game).first()
        previous = pointer.season if pointer else None
        if pointer is None:
            pointer = SeasonPointer.objects.create(game=game, season=season, version=1)
        elif pointer.season_id != season.id:
            pointer.season = season
            pointer.version += 1
            pointer.save(update_fields=["season", "version", "updated_at"])
        else:
            return pointer
        SeasonPointerChange.objects.create(
            game=game, from_season=previous, to_season=season, version=pointer.version, actor=actor, reason=reason
        )
    catalog_publish(slug=game.slug)
    return pointer


def pointer_rollback(*, game: Game, actor: str, reason: str = "") -> SeasonPointer:
    """Point readers back at the season the pointer held before its last change."""
    last = SeasonPointerChange.objects.filter(game=game).order_by("-version").first()
    if last is None or last.from_season is None:
        raise ValueError("nothing to roll back to")
    return pointer_set(game=game, season=last.from_season, actor=actor, reason=reason or f"rollback of v{last.version}")
