"""Writes of the players' side of the index: profiles (created by a first result, changed by a
signed PATCH), season regions, friendships, and the names and hidden set the board scripts read.

These are the boards' own rows; the use cases that also touch the ledger (hiding, deletion,
region moves) are scoring/players.py, which calls these.
"""

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.db import insert_rows, rows_by_keys
from common.redis import client, lua_path, lua_script
from seasons.catalog import catalog_publish_on_commit
from seasons.models import Game, Season

from . import keys, writer
from .models import Friendship, Player, SeasonRegion
from .selectors import season_regions_of
from .tiers import Tiers

REGIONS_ADD_SCRIPT = lua_path(__file__, "regions_add.lua")

Profile = tuple[str | None, str | None]  # (display_name, region)


def players_register(
    *, game: Game, profiles: Iterable[tuple[str, str | None, str | None]]
) -> tuple[dict[str, Profile], dict[str, str], set[str]]:
    """Create missing players; fill a name or region only where the profile has none yet.

    `profiles` is (player_id, display_name, region). Returns each player's (display_name, region),
    the display names that are new (for the names index in Redis), and the players this call
    created (new to the game: no season region yet). Rows are written in player id order so
    concurrent batches lock them in one order.
    """
    wanted: dict[str, Profile] = {}
    for player_id, name, region in profiles:
        old_name, old_region = wanted.get(player_id, (None, None))
        wanted[player_id] = (old_name or name, old_region or region)
    known: dict[str, Profile] = {pid: (name, region) for pid, name, region in _profiles(game, wanted)}
    missing = sorted(pid for pid in wanted if pid not in known)
    new_names: dict[str, str] = {}
    created: set[str] = set()
    if missing:
        now = timezone.now()
        written = insert_rows(
            Player._meta.db_table,
            [
                ("game_id", "bigint"),
                ("player_id", "text"),
                ("display_name", "text"),
                ("region", "text"),
                ("hidden", "boolean"),
                ("created_at", "timestamptz"),
            ],
            [(game.id, pid, wanted[pid][0], wanted[pid][1], False, now) for pid in missing],
            order_by="player_id",
            on_conflict="ON CONFLICT (game_id, player_id) DO NOTHING",
        )
        if written == len(missing):
            known.update((pid, wanted[pid]) for pid in missing)
            created.update(missing)
        else:  # some were created by a concurrent batch a moment ago: read them all back
            known.update((pid, (name, region)) for pid, name, region in _profiles(game, missing))
        # Names into the board index (writing one a concurrent batch wrote as well is harmless).
        new_names.update((pid, name) for pid in missing if (name := known[pid][0]) and name == wanted[pid][0])
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
    return known, new_names, created


def _profiles(game: Game, player_ids: Iterable[str]) -> list[tuple[Any, ...]]:
    """(player_id, display_name, region) of those players of the game that exist."""
    return rows_by_keys(
        Player._meta.db_table,
        ["player_id", "display_name", "region"],
        equal={"game_id": game.id},
        key="player_id",
        key_type="text",
        keys=player_ids,
    )


def season_regions_fix(
    *, season: Season, candidates: dict[str, str | None], unfixed: Iterable[str] = ()
) -> dict[str, str]:
    """Fix each player's region for the season to `candidates[player]` unless one is fixed already.

    Returns the region in force for each candidate that has one (fixed earlier, or now). Called
    only for ranked (accepted) results: a region is fixed by the first ranked result. `unfixed`:
    candidates known to have none yet (players created a moment ago), not looked up. (Were one
    fixed after all, its insert conflicts and every region is read back.)
    """
    if not candidates:
        return {}
    skip = set(unfixed)
    fixed = season_regions_of(season=season, player_ids=[pid for pid in candidates if pid not in skip])
    missing = sorted(pid for pid in candidates if pid not in fixed and candidates[pid])
    if missing:
        now = timezone.now()
        written = insert_rows(
            SeasonRegion._meta.db_table,
            [("season_id", "bigint"), ("player_id", "text"), ("region", "text"), ("created_at", "timestamptz")],
            [(season.id, pid, candidates[pid], now) for pid in missing],
            order_by="player_id",
            on_conflict="ON CONFLICT (season_id, player_id) DO NOTHING",
        )
        if written == len(missing):
            fixed.update((pid, str(candidates[pid])) for pid in missing)
        else:  # some were fixed by a concurrent batch a moment ago
            fixed.update(season_regions_of(season=season, player_ids=missing))
        season_regions_note(season=season, regions={str(candidates[pid]) for pid in missing})
    return fixed


def season_regions_note(*, season: Season, regions: Iterable[str]) -> None:
    """After the caller's transaction commits: these regions into the season's regions set, when
    it is there (selectors.game_regions builds a missing one from the table). A note lost to a
    Redis outage is made good when the set is next built (selectors.REGIONS_TTL_S)."""
    listed = sorted(set(regions))
    if not listed:
        return
    key = keys.regions_key(season.game.slug, season.id)

    def note() -> None:
        lua_script(REGIONS_ADD_SCRIPT)(keys=[key], args=listed, client=client())

    transaction.on_commit(note, robust=True)


def friendship_add(*, game: Game, player_id: str, friend_id: str) -> None:
    """A confirmed, mutual friendship (idempotent). The caller is the studio's signed backend.
    The friends sets in Redis (read by the friends board) follow the row at once."""
    if player_id == friend_id:
        raise ValueError("a player cannot befriend themselves")
    a, b = sorted([player_id, friend_id])
    Friendship.objects.get_or_create(game=game, player_a=a, player_b=b)
    writer.friends_store(game=game.slug, player_id=a, friend_id=b, together=True)


def friendship_remove(*, game: Game, player_id: str, friend_id: str) -> None:
    a, b = sorted([player_id, friend_id])
    Friendship.objects.filter(game=game, player_a=a, player_b=b).delete()
    writer.friends_store(game=game.slug, player_id=a, friend_id=b, together=False)


def player_lock(*, game: Game, player_id: str) -> Player | None:
    """Lock a player's row until the transaction ends (one correction per player at a time)."""
    return Player.objects.select_for_update().filter(game=game, player_id=player_id).first()


def player_profile_set(
    *, game: Game, player_id: str, display_name: str | None = None, hidden: bool | None = None
) -> tuple[Player, bool]:
    """Set a display name and/or the hidden flag, in the index too. Returns the player and whether
    `hidden` flipped (the caller then corrects their boards). Raises Player.DoesNotExist for a
    deleted account. Locks the row; call inside a transaction."""
    player, _ = Player.objects.select_for_update().get_or_create(game=game, player_id=player_id)
    if player.deleted_at is not None:
        raise Player.DoesNotExist(player_id)
    if display_name is not None:
        player.display_name = display_name
    flipped = hidden is not None and hidden != player.hidden
    if hidden is not None:
        player.hidden = hidden
    player.save(update_fields=["display_name", "hidden"])
    return player, flipped


def player_index_sync(*, game: Game, player: Player, name_changed: bool, hidden_flipped: bool) -> None:
    """After the profile's commit: the names hash and the hidden set follow the row."""
    if name_changed and player.display_name is not None:
        writer.names_store(game=game.slug, names={player.player_id: player.display_name})
    if hidden_flipped:
        if player.hidden:
            writer.hidden_add(game=game.slug, player_ids=[player.player_id])
        else:
            writer.hidden_remove(game=game.slug, player_ids=[player.player_id])


def player_tombstone(*, game: Game, player_id: str, now: datetime) -> None:
    """An account deleted: the row stays, hidden, nameless, marked deleted (never shown again).
    Locks the row; call inside a transaction."""
    player, _ = Player.objects.select_for_update().get_or_create(game=game, player_id=player_id)
    player.deleted_at = player.deleted_at or now
    player.display_name = None
    player.hidden = True
    player.save(update_fields=["deleted_at", "display_name", "hidden"])


def player_forget(*, game: Game, player_id: str, pseudonym: str, now: datetime) -> None:
    """The rest of a deletion: derived rows dropped (season regions, friendships and the friends
    sets), the pseudonym the ledger's rows moved to registered hidden."""
    SeasonRegion.objects.filter(season__game=game, player_id=player_id).delete()
    friendships = Friendship.objects.filter(game=game).filter(Q(player_a=player_id) | Q(player_b=player_id))
    friends = [b if a == player_id else a for a, b in friendships.values_list("player_a", "player_b")]
    friendships.delete()
    writer.friends_forget(game=game.slug, player_id=player_id, friend_ids=friends)
    Player.objects.get_or_create(game=game, player_id=pseudonym, defaults={"hidden": True, "deleted_at": now})


def season_region_set(*, season: Season, player_id: str, region: str) -> str | None:
    """Move a player's region for a season; returns the old one. Locks the row; call inside a
    transaction."""
    row = SeasonRegion.objects.select_for_update().filter(season=season, player_id=player_id).first()
    old = row.region if row else None
    if row is None:
        SeasonRegion.objects.create(season=season, player_id=player_id, region=region)
    else:
        row.region = region
        row.save(update_fields=["region"])
    season_regions_note(season=season, regions=[region])
    return old


def board_tiers_set(*, game: Game, board: str, tiers: Tiers | None) -> None:
    """Set (or with None remove) a board kind's tiers: the game's row under its lock, then its
    catalog published again after the commit, so every read shows them from its next request."""
    with transaction.atomic():
        locked = Game.objects.select_for_update().get(pk=game.pk)
        configured = dict(locked.tiers or {})
        if tiers is None:
            configured.pop(board, None)
        else:
            configured[board] = tiers.document()
        locked.tiers = configured
        locked.save(update_fields=["tiers"])
        catalog_publish_on_commit(slug=locked.slug)
