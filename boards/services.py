"""Writes for players: profiles created by their first result, and their season region."""

from collections.abc import Iterable

from django.utils import timezone

from leaderboard_site.db import insert_unnest
from seasons.models import Game, Season

from .models import Player, SeasonRegion

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
