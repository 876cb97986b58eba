"""Writes for players: profiles created by their first result, and their season region."""

import hashlib
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard_site.db import insert_unnest
from seasons.models import Game, Season

from .models import Friendship, Player, SeasonRegion

Profile = tuple[str | None, str | None]  # (display_name, region)


def players_register(
    *, game: Game, profiles: Iterable[tuple[str, str | None, str | None]]
) -> tuple[dict[str, Profile], dict[str, str]]:
    """Create missing players; fill a name or region only where the profile has none yet.

    `profiles` is (player_id, display_name, region). Returns each player's (display_name, region)
    and the display names that are new (for the names index in Redis). Rows are written in player
    id order so concurrent batches lock them in one order.
    """
    wanted: dict[str, Profile] = {}
    for player_id, name, region in profiles:
        old_name, old_region = wanted.get(player_id, (None, None))
        wanted[player_id] = (old_name or name, old_region or region)
    known: dict[str, Profile] = {
        pid: (name, region)
        for pid, name, region in Player.objects.filter(game=game, player_id__in=list(wanted)).values_list(
            "player_id", "display_name", "region"
        )
    }
    missing = sorted(pid for pid in wanted if pid not in known)
    new_names: dict[str, str] = {}
    if missing:
        created = insert_unnest(
            Player._meta.db_table,
            [
                ("game_id", "bigint"),
                ("player_id", "text"),
                ("display_name", "text"),
                ("region", "text"),
                ("hidden", "boolean"),
                ("created_at", "timestamptz"),
            ],
            [
                [game.id] * len(missing),
                missing,
                [wanted[pid][0] for pid in missing],
                [wanted[pid][1] for pid in missing],
                [False] * len(missing),
                [timezone.now()] * len(missing),
            ],
            on_conflict="ON CONFLICT (game_id, player_id) DO NOTHING",
            returning="player_id",
        )
        for (pid,) in created:
            known[pid] = wanted[pid]
            if wanted[pid][0]:
                new_names[pid] = wanted[pid][0]  # type: ignore[assignment]
        raced = [pid for pid in missing if pid not in known]
        if raced:  # created by a concurrent batch a moment ago
            known.update(
                (pid, (name, region))
                for pid, name, region in Player.objects.filter(game=game, player_id__in=raced).values_list(
                    "player_id", "display_name", "region"
                )
            )
    for pid in sorted(wanted):
        name, region = known[pid]
        want_name, want_region = wanted[pid]
        if name is None and want_name:
            if Player.objects.filter(game=game, player_id=pid, display_name__isnull=True).update(
                display_name=want_name
            ):
                new_names[pid] = want_name
            name = want_name
        if region is None and want_region:
            Player.objects.filter(game=game, player_id=pid, region__isnull=True).update(region=want_region)
            region = want_region
        known[pid] = (name, region)
    return known, new_names


def season_regions_fix(*, season: Season, candidates: dict[str, str | None]) -> dict[str, str]:
    """Fix each player's region for the season to `candidates[player]` unless one is fixed already.

    Returns the region in force for each candidate that has one (fixed earlier, or now). Called
    only for ranked (accepted) results: a region is fixed by the first ranked result.
    """
    if not candidates:
        return {}
    fixed = season_regions_of(season=season, player_ids=candidates)
    missing = sorted(pid for pid in candidates if pid not in fixed and candidates[pid])
    if missing:
        insert_unnest(
            SeasonRegion._meta.db_table,
            [("season_id", "bigint"), ("player_id", "text"), ("region", "text"), ("created_at", "timestamptz")],
            [
                [season.id] * len(missing),
                missing,
                [candidates[pid] for pid in missing],
                [timezone.now()] * len(missing),
            ],
            on_conflict="ON CONFLICT (season_id, player_id) DO NOTHING",
        )
        fixed.update(season_regions_of(season=season, player_ids=missing))
    return fixed


def season_regions_of(*, season: Season, player_ids: Iterable[str]) -> dict[str, str]:
    return dict(
        SeasonRegion.objects.filter(season=season, player_id__in=list(player_ids)).values_list("player_id", "region")
    )


MAX_FRIENDS = 500


def friendship_add(*, game: Game, player_id: str, friend_id: str) -> None:
    """A confirmed, mutual friendship (idempotent). The caller is the studio's signed backend."""
    if player_id == friend_id:
        raise ValueError("a player cannot befriend themselves")
    a, b = sorted([player_id, friend_id])
    Friendship.objects.get_or_create(game=game, player_a=a, player_b=b)


def friendship_remove(*, game: Game, player_id: str, friend_id: str) -> None:
    a, b = sorted([player_id, friend_id])
    Friendship.objects.filter(game=game, player_a=a, player_b=b).delete()


def player_update(*, game: Game, player_id: str, display_name: str | None = None, hidden: bool | None = None) -> Player:
    """Change a profile. Hiding takes the player off every public board at once (and they count
    in nobody's public rank); showing them again puts their entries back from the ledger."""
    from scoring import redis_boards
    from scoring.corrections import player_correct

    with transaction.atomic():
        player, _ = Player.objects.select_for_update().get_or_create(game=game, player_id=player_id)
        if player.deleted_at is not None:
            raise Player.DoesNotExist(player_id)
        if display_name is not None:
            player.display_name = display_name
        flip = hidden is not None and hidden != player.hidden
        if hidden is not None:
            player.hidden = hidden
        player.save(update_fields=["display_name", "hidden"])
    client = redis_boards.client()
    if display_name is not None:
        redis_boards.names_store(game.slug, {player_id: display_name})
    if flip:
        if player.hidden:
            client.sadd(redis_boards.hidden_key(game.slug), player_id)
        else:
            client.srem(redis_boards.hidden_key(game.slug), player_id)
        player_correct(game=game, player_id=player_id)
    return player


def player_delete(*, game: Game, player_id: str) -> None:
    """Account deletion: off every live board at once, ledger rows pseudonymised, never shown again.

    A tombstone keeps the id hidden (later results for it stay off the boards); the ledger's rows
    move to a pseudonym that is hidden too, so queued events cannot bring anything back.
    """
    from scoring import redis_boards
    from scoring.corrections import player_correct
    from scoring.models import ScoreEvent, SeasonTotal

    pseudonym = "~deleted~" + hashlib.sha256(f"{game.id}:{player_id}".encode()).hexdigest()[:24]
    client = redis_boards.client()
    client.sadd(redis_boards.hidden_key(game.slug), player_id, pseudonym)
    with transaction.atomic():
        player, _ = Player.objects.select_for_update().get_or_create(game=game, player_id=player_id)
        player.deleted_at = player.deleted_at or timezone.now()
        player.display_name = None
        player.hidden = True
        player.save(update_fields=["deleted_at", "display_name", "hidden"])
    player_correct(game=game, player_id=player_id)  # removes every entry: the ledger excludes them
    with transaction.atomic():
        ScoreEvent.objects.filter(game=game, player_id=player_id).update(player_id=pseudonym)
        # Derived per-player rows (capacity totals, season regions) are dropped, not renamed.
        SeasonTotal.objects.filter(season__game=game, player_id=player_id).delete()
        SeasonRegion.objects.filter(season__game=game, player_id=player_id).delete()
        Friendship.objects.filter(game=game).filter(Q(player_a=player_id) | Q(player_b=player_id)).delete()
        Player.objects.get_or_create(
            game=game, player_id=pseudonym, defaults={"hidden": True, "deleted_at": timezone.now()}
        )
    client.hdel(redis_boards.names_key(game.slug), player_id)


def friends_of(*, game: Game, player_id: str) -> list[str]:
    pairs = Friendship.objects.filter(game=game).filter(Q(player_a=player_id) | Q(player_b=player_id))
    friends = [b if a == player_id else a for a, b in pairs.values_list("player_a", "player_b")[:MAX_FRIENDS]]
    return sorted(friends)


def player_region_move(*, season: Season, player_id: str, region: str) -> str | None:
    """Move a player to another region for a season (a moderator's decision): the season region
    and the region of every result of theirs in that season change in one transaction, then their
    old and new region boards are corrected in one atomic step. Returns the old region."""
    from scoring.corrections import player_correct
    from scoring.models import ScoreEvent

    with transaction.atomic():
        row = SeasonRegion.objects.select_for_update().filter(season=season, player_id=player_id).first()
        old = row.region if row else None
        if row is None:
            SeasonRegion.objects.create(season=season, player_id=player_id, region=region)
        else:
            row.region = region
            row.save(update_fields=["region"])
        previous: set[str] = {
            r
            for r in ScoreEvent.objects.filter(season=season, player_id=player_id).values_list("region", flat=True)
            if r
        }
        ScoreEvent.objects.filter(season=season, player_id=player_id).update(region=region)
    player_correct(game=season.game, player_id=player_id, extra_regions=previous - {region})
    return old
