"""Players of a game, and the region each one counts in for a season."""

from django.db import models


class Player(models.Model):
    game = models.ForeignKey("seasons.Game", on_delete=models.PROTECT, related_name="players")
    player_id = models.CharField(max_length=64)
    display_name = models.CharField(max_length=100, null=True, blank=True)
    region = models.CharField(max_length=16, null=True, blank=True)
    hidden = models.BooleanField(default=False)
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="Account deleted: pseudonymised, never shown.")
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


class Friendship(models.Model):
    """A confirmed, mutual friendship, stored once per pair (player_a < player_b)."""

    game = models.ForeignKey("seasons.Game", on_delete=models.CASCADE, related_name="friendships")
    player_a = models.CharField(max_length=64)
    player_b = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["game", "player_a", "player_b"], name="friendship_unique_pair"),
            models.CheckConstraint(condition=models.Q(player_a__lt=models.F("player_b")), name="friendship_ordered"),
        ]
        indexes = [models.Index(fields=["game", "player_b"], name="friendship_b")]

    def __str__(self) -> str:
        return f"{self.player_a} <-> {self.player_b}"
