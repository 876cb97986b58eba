"""Player accounts, the use cases that reach the ledger: hiding, deletion, region moves.

Each changes the profile (boards/services.py), the ledger where it must, and then corrects the
player's boards from the ledger (corrections.py), the boards of tournament periods not final too
(entries.py).
"""

import hashlib

from django.db import transaction
from django.utils import timezone

from boards.models import Player
from boards.services import (
    player_forget,
    player_index_sync,
    player_profile_set,
    player_tombstone,
    season_region_set,
)
from boards.writer import hidden_add, name_forget
from seasons.models import Game, Season

from .corrections import player_correct
from .entries import tournament_player_correct
from .league_corrections import league_player_correct
from .models import SeasonTotal
from .selectors import player_results


def player_update(*, game: Game, player_id: str, display_name: str | None = None, hidden: bool | None = None) -> Player:
    """Change a profile. Hiding takes the player off every public board at once (and they count
    in nobody's public rank); showing them again puts their entries back from the ledger.
    Raises Player.DoesNotExist for a deleted account.

    A hide reaches the boards before it commits: if Redis cannot be reached (redis.RedisError, a
    503 `boards_unavailable`) or a rebuild holds the game (GamePaused), the transaction rolls back
    and nothing is stored, so no hide is ever stored that the live boards do not show. What Redis
    took before the failure only hides more (the id in the hidden set, entries taken off); a retry
    of the request, or the boards' rebuild from the ledger, puts the rest right."""
    with transaction.atomic():
        player, flipped = player_profile_set(game=game, player_id=player_id, display_name=display_name, hidden=hidden)
        if flipped and player.hidden:
            _index_and_boards(game=game, player=player, name_changed=display_name is not None)
            return player
    # Showing again (or a name): after the commit, so a failure leaves the player hidden, not shown.
    _index_and_boards(game=game, player=player, name_changed=display_name is not None, flipped=flipped)
    return player


def _index_and_boards(*, game: Game, player: Player, name_changed: bool, flipped: bool = True) -> None:
    player_index_sync(game=game, player=player, name_changed=name_changed, hidden_flipped=flipped)
    if flipped:
        player_correct(game=game, player_id=player.player_id)
        tournament_player_correct(game=game, player_id=player.player_id, now=timezone.now())
        league_player_correct(game=game, player_id=player.player_id, now=timezone.now())


DELETED_PREFIX = "~deleted~"  # the ledger's rows of a deleted account move to DELETED_PREFIX + a hash


def pseudonym_of(*, game: Game, player_id: str) -> str:
    return DELETED_PREFIX + hashlib.sha256(f"{game.id}:{player_id}".encode()).hexdigest()[:24]


def player_delete(*, game: Game, player_id: str) -> None:
    """Account deletion: off every live board at once, ledger rows pseudonymised, never shown again.

    A tombstone keeps the id hidden (later results for it stay off the boards); the ledger's rows
    move to a pseudonym that is hidden too, so queued events cannot bring anything back.

    One transaction, committed only once the boards are corrected: if Redis cannot be reached at
    any step (a 503 `boards_unavailable`), nothing is stored and the account stays as it was (what
    Redis took before the failure only hides more); the deletion is done when it answers 204.
    """
    pseudonym = pseudonym_of(game=game, player_id=player_id)
    hidden_add(game=game.slug, player_ids=[player_id, pseudonym])
    with transaction.atomic():
        player_tombstone(game=game, player_id=player_id, now=timezone.now())
        player_correct(game=game, player_id=player_id)  # removes every entry: the ledger excludes them
        tournament_player_correct(game=game, player_id=player_id, now=timezone.now())
        league_player_correct(game=game, player_id=player_id, now=timezone.now())
        player_results(game=game, player_id=player_id).update(player_id=pseudonym)
        # Derived per-player rows (capacity totals, season regions, friendships) are dropped.
        SeasonTotal.objects.filter(season__game=game, player_id=player_id).delete()
        player_forget(game=game, player_id=player_id, pseudonym=pseudonym, now=timezone.now())
        name_forget(game=game.slug, player_id=player_id)


def player_region_move(*, season: Season, player_id: str, region: str) -> str | None:
    """Move a player to another region for a season (a moderator's decision): the season region
    and the region of every result of theirs in that season change in one transaction, then their
    old and new region boards are corrected in one atomic step. Returns the old region."""
    with transaction.atomic():
        old = season_region_set(season=season, player_id=player_id, region=region)
        previous: set[str] = {
            r
            for r in player_results(game=season.game, player_id=player_id, seasons=[season]).values_list(
                "region", flat=True
            )
            if r
        }
        player_results(game=season.game, player_id=player_id, seasons=[season]).update(region=region)
    player_correct(game=season.game, player_id=player_id, extra_regions=previous - {region})
    return old
