"""Players of a game, the region each one counts in for a season, their friendships, and the
final standings of frozen seasons."""

from django.db import models

from seasons.models import Season


class Player(models.Model):
    # No index of its own (the unique (game, player_id) index leads with it) and no database
    # constraint (written with every new player's first result): see scoring/models.py.
    game = models.ForeignKey(
        "seasons.Game", on_delete=models.PROTECT, related_name="players", db_index=False, db_constraint=False
    )
    player_id = models.CharField(max_length=64)
    display_name = models.CharField(max_length=100, null=True, blank=True)
    region = models.CharField(max_length=16, null=True, blank=True)
    hidden = models.BooleanField(default=False)
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="Account deleted: pseudonymised, never shown.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["game", "player_id"], name="player_unique_in_game")]
        # The few hidden and deleted players of a game, without a pass over all its players: every
        # frozen read leaves them out (boards/gone.py).
        indexes = [
            models.Index(
                fields=["game", "player_id"],
                name="player_hidden",
                condition=models.Q(hidden=True) | models.Q(deleted_at__isnull=False),
            )
        ]

    def __str__(self) -> str:
        return self.player_id


class SeasonRegion(models.Model):
    """A player's region is fixed for a season by their first ranked result in it."""

    season = models.ForeignKey("seasons.Season", on_delete=models.PROTECT, db_index=False, db_constraint=False)
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


class FrozenStanding(models.Model):
    """One line of a board's final standings, written when its season freezes.

    Every read endpoint answers for a frozen or archived season from these rows, also after the
    season's Redis keys are gone. `position` is the 0-based display order (score descending, then
    earlier reach, then player id); `rank` is the game's tie rule applied.
    """

    # In the database the table is partitioned by season (migration 0007): a freeze attaches its
    # season's rows as a partition (boards.standings.standings_load), the primary key there is
    # (id, season_id), and rows written otherwise go to the DEFAULT partition.
    # No database constraint: a freeze writes one row per player and board (millions), each checked
    # at commit otherwise; Django's CASCADE still deletes them with their season. No index of its own:
    # the unique (season, board, region, period, position) index leads with it.
    season = models.ForeignKey(
        "seasons.Season", on_delete=models.CASCADE, related_name="standings", db_index=False, db_constraint=False
    )
    board = models.CharField(max_length=16)
    region = models.CharField(max_length=16)
    period = models.CharField(max_length=16)
    position = models.PositiveIntegerField()
    rank = models.PositiveIntegerField()
    player_id = models.CharField(max_length=64)
    score = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["season", "board", "region", "period", "position"], name="standing_unique_position"
            ),
        ]
        # The player first: the freeze builds this index over millions of rows, and with the player
        # first most comparisons of its sort end at the first column (11.9 s against 24.3 s for
        # 10M rows with the player last: docs/performance.md); a lookup is as exact either way.
        indexes = [models.Index(fields=["player_id", "season", "board", "region", "period"], name="standing_player")]

    def __str__(self) -> str:
        return f"{self.season_id}/{self.board}/{self.region}/{self.period} #{self.rank} {self.player_id}"


class SeasonStandings(Season):
    """A season seen through its final standings: the admin lists frozen seasons with downloads."""

    class Meta:
        proxy = True
        verbose_name = "final standings"
        verbose_name_plural = "final standings"
