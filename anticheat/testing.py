"""Test factories of anti-cheat (for its own tests and the apps above it)."""

from seasons.models import Game

from .models import ServerKey
from .services import game_rules_set, server_key_create


def make_key(game: Game) -> ServerKey:
    return server_key_create(game=game)


def limits_off(game: Game) -> None:
    """No player or key bucket for this game: most tests send bursts on purpose."""
    game_rules_set(game=game, player_burst=0, key_rate_per_s=0)
