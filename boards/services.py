"""Writes for players: profiles created by their first result, and their season region."""

from collections.abc import Iterable

from seasons.models import Game, Season

from .models import Player, SeasonRegion


def players_register(
    *, game: Game, profiles: Iterable[tuple[str, str | None, str | None]]
) -> tuple[dict[str, Player], dict[str, str]]:
    """Create missing players; fill a name or region only where the profile has none yet.

    `profiles` is (player_id, display_name, region). Returns the players by id and the display
    names that are new (for the names index in Redis). Rows are written in player id order so
    concurrent batches lock them in one order.
    """
    wanted: dict[str, tuple[str | None, str | None]] = {}
    for player_id, name, region in profiles:
        old_name, old_region = wanted.get(player_id, (None, None))
        wanted[player_id] = (old_name or name, old_region or region)
    existing = {p.player_id: p for p in Player.objects.filter(game=game, player_id__in=list(wanted))}
    missing = [
        Player(game=game, player_id=pid, display_name=wanted[pid][0], region=wanted[pid][1])
        for pid in sorted(wanted)
        if pid not in existing
    ]
    new_names: dict[str, str] = {}
    if missing:
        Player.objects.bulk_create(missing, ignore_conflicts=True)
        created = Player.objects.filter(game=game, player_id__in=[p.player_id for p in missing])
        for player in created:
            existing[player.player_id] = player
            if player.display_name:
                new_names[player.player_id] = player.display_name
    for pid in sorted(wanted):
        player = existing[pid]
        name, region = wanted[pid]
        fields = []
        if player.display_name is None and name:
            player.display_name = name
            fields.append("display_name")
            new_names[pid] = name
        if player.region is None and region:
            player.region = region
            fields.append("region")
        if fields:
            Player.objects.filter(pk=player.pk, **{f"{f}__isnull": True for f in fields}).update(
                **{f: getattr(player, f) for f in fields}
            )
    return existing, new_names


def season_regions_fix(*, season: Season, candidates: dict[str, str | None]) -> dict[str, str]:
    """Fix each player's region for the season to `candidates[player]` unless one is fixed already.

    Returns the region in force for each candidate that has one (fixed earlier, or now). Called
    only for ranked (accepted) results: a region is fixed by the first ranked result.
    """
    if not candidates:
        return {}
    fixed = dict(
        SeasonRegion.objects.filter(season=season, player_id__in=list(candidates)).values_list("player_id", "region")
    )
    missing = [
        SeasonRegion(season=season, player_id=pid, region=candidates[pid])
        for pid in sorted(candidates)
        if pid not in fixed and candidates[pid]
    ]
    if missing:
        SeasonRegion.objects.bulk_create(missing, ignore_conflicts=True)
        fixed.update(
            SeasonRegion.objects.filter(season=season, player_id__in=[r.player_id for r in missing]).values_list(
                "player_id", "region"
            )
        )
    return fixed


def season_regions_of(*, season: Season, player_ids: Iterable[str]) -> dict[str, str]:
    return dict(
        SeasonRegion.objects.filter(season=season, player_id__in=list(player_ids)).values_list("player_id", "region")
    )
