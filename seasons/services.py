"""Writes for games and seasons."""

from datetime import datetime, timedelta

from django.db import transaction

from scoring.encoding import time_bits_for_window

from .models import Game, Season, TieRule

DEFAULT_SEASON_DAYS = 90
DEFAULT_GRACE_S = 3600


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
    return Season.objects.create(
        game=game,
        name=name or f"Season {number}",
        starts_at=starts_at,
        ends_at=ends_at,
        grace_s=grace_s,
        time_bits=time_bits_for_window(window_s),
    )


@transaction.atomic
def game_create(
    *,
    slug: str,
    name: str,
    tie_rule: str = TieRule.COMPETITION,
    max_points_per_match: int = 10_000,
    season_start: datetime,
    season_days: float = DEFAULT_SEASON_DAYS,
) -> tuple[Game, Season]:
    """Create a game and its first season, open from `season_start` for `season_days` days."""
    if tie_rule not in TieRule.values:
        raise ValueError(f"tie rule must be one of {', '.join(TieRule.values)}")
    if max_points_per_match < 0:
        raise ValueError("max points per match must be >= 0")
    game = Game(slug=slug, name=name, tie_rule=tie_rule, max_points_per_match=max_points_per_match)
    game.full_clean()
    game.save()
    season = season_create(game=game, starts_at=season_start, days=season_days)
    return game, season
