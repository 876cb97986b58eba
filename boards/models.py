"""Players of a game, and the region each one counts in for a season."""

from django.db import models


class Player(models.Model):
    game = models.ForeignKey("seasons.Game", on_delete=models.PROTECT, related_name="players")
    player_id = models.CharField(max_length=64)
    display_name = models.CharField(max_length=100, null=True, blank=True)
    region = models.CharField(max_length=16, null=True, blank=True)
    hidden = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["game", "player_id"], name="player_unique_in_game")]

    def __str__(self) -> str:
        return self.player_id


class SeasonRegion(models.Model):
    """A player's region is fixed for a season by their first ranked result in it."""

    season = models.ForeignKey("seasons.Season", on_delete=models.PROTECT)
    player_id = models.CharField(max_length=64)
    region = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["season", "player_id"], name="season_region_unique")]

    def __str__(self) -> str:
        return f"{self.player_id}@{self.region}"
