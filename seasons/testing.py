"""Test factories of the seasons app (for its own tests and the apps above it)."""

from datetime import datetime, timedelta

from django.utils import timezone

from .models import Game
from .services import game_create


def make_game(
    slug: str = "arena",
    *,
    tie_rule: str = "competition",
    start: datetime | None = None,
    days: float = 90,
    max_points: int = 10_000,
    ascending: bool = False,
    board_shards: int = 1,
) -> Game:
    """A game whose first season started a day ago (or at `start`) and lasts `days`."""
    game, _ = game_create(
        slug=slug,
        name=slug.title(),
        tie_rule=tie_rule,
        max_points_per_match=max_points,
        ascending=ascending,
        season_start=start or timezone.now() - timedelta(days=1),
        season_days=days,
        board_shards=board_shards,
    )
    return game
