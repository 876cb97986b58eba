"""Games and their seasons. A season is a time window with its own Redis keys, never reset."""

from datetime import datetime, timedelta

from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

MAX_BOARD_SHARDS = 64
GAME_SLUG_VALIDATOR = RegexValidator(r"^[a-z0-9-]{1,40}$", "A game slug is 1-40 of [a-z0-9-].")


class TieRule(models.TextChoices):
    COMPETITION = "competition", "competition (1224)"
    DENSE = "dense", "dense (1223)"
    FIRST = "first", "first to reach (1234)"


class Game(models.Model):
    slug = models.CharField(max_length=40, unique=True, validators=[GAME_SLUG_VALIDATOR])
    name = models.CharField(max_length=200)
    tie_rule = models.CharField(max_length=16, choices=TieRule.choices, default=TieRule.COMPETITION)
    max_points_per_match = models.BigIntegerField(default=10_000, validators=[MinValueValidator(0)])
    ascending = models.BooleanField(
        default=False,
        help_text="Lower values win (a speedrun time in ms, golf strokes): every board keeps each player's best "
        "(lowest) value in its window.",
    )
    dimensions = models.JSONField(
        default=list,
        blank=True,
        help_text='Extra board dimensions, e.g. ["country", "platform"]: a result\'s "country": "de" also '
        "counts on the board `region=country-de`. No code change needed.",
    )
    season_schedule_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Start a new season of this many days when the last one ends (empty: seasons are started by hand).",
    )
    season_schedule_cron = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="Or a cron expression (UTC) of season boundaries; '0 0 * * 1': weekly seasons from Monday 00:00.",
    )
    board_shards = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_BOARD_SHARDS)],
        help_text="Split every board of the game by player across this many sorted sets (1: one per board). "
        "A change applies from the next season: a live board is never resharded.",
    )
    tiers = models.JSONField(
        default=dict,
        blank=True,
        help_text='Tier badges per board kind (the signed PUT .../boards/{board}/tiers writes it): {"all": {"by": '
        '"percent", "tiers": [{"name": "diamond", "cutoff": 1}, ..., {"name": "bronze"}]}}.',
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class SeasonStatus(models.TextChoices):
    SCHEDULED = "scheduled"
    ACTIVE = "active"
    GRACE = "grace"
    FROZEN = "frozen"
    ARCHIVED = "archived"


class Season(models.Model):
    """A season's window is [starts_at, ends_at); results played in it count until ends_at + grace.

    `time_bits` is fixed at creation: the low bits of every board score of this season hold the
    inverted "reached at" second, sized so the whole window plus grace fits (boards/codec.py).
    `board_shards` too, copied from the game: how many sorted sets each of the season's boards is
    split into by player (boards/keys.py), never changed while the season's boards live.
    """

    game = models.ForeignKey(Game, on_delete=models.PROTECT, related_name="seasons")
    name = models.CharField(max_length=100)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    grace_s = models.PositiveIntegerField(default=3600)
    time_bits = models.PositiveSmallIntegerField()
    board_shards = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(MAX_BOARD_SHARDS)]
    )
    frozen_at = models.DateTimeField(null=True, blank=True)
    frozen_tiers = models.JSONField(
        null=True, blank=True, help_text="The game's tiers when the season froze: its frozen reads show these."
    )
    archived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-starts_at"]
        indexes = [models.Index(fields=["game", "starts_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(ends_at__gt=models.F("starts_at")), name="season_ends_after_start"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.game.slug}/{self.name}"

    @property
    def closes_at(self) -> datetime:
        """The end of grace: after it no result counts for this season."""
        return self.ends_at + timedelta(seconds=self.grace_s)

    def status_at(self, now: datetime) -> str:
        if self.archived_at is not None:
            return SeasonStatus.ARCHIVED
        if self.frozen_at is not None or now >= self.closes_at:
            return SeasonStatus.FROZEN
        if now < self.starts_at:
            return SeasonStatus.SCHEDULED
        if now < self.ends_at:
            return SeasonStatus.ACTIVE
        return SeasonStatus.GRACE

    def accepts_results_at(self, now: datetime) -> bool:
        return self.status_at(now) in (SeasonStatus.SCHEDULED, SeasonStatus.ACTIVE, SeasonStatus.GRACE)

    def contains(self, played_at: datetime) -> bool:
        return self.starts_at <= played_at < self.ends_at


class SeasonPointer(models.Model):
    """The season readers get by default: one versioned value per game.

    Every read resolves it once (so an answer never mixes two seasons) and names the season it
    used. Rotation moves it; an operator can roll it back in the admin. Submissions do not use it:
    a result counts for the season its `played_at` falls in.
    """

    game = models.OneToOneField(Game, on_delete=models.CASCADE, related_name="pointer")
    season = models.ForeignKey(Season, on_delete=models.PROTECT, related_name="+")
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.game_id} -> season {self.season_id} (v{self.version})"


class SeasonPointerChange(models.Model):
    """The pointer's history: each switch or rollback, by whom and why."""

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="pointer_changes")
    from_season = models.ForeignKey(Season, null=True, on_delete=models.PROTECT, related_name="+")
    to_season = models.ForeignKey(Season, on_delete=models.PROTECT, related_name="+")
    version = models.PositiveIntegerField()
    actor = models.CharField(max_length=150)
    reason = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"v{self.version}: {self.from_season_id} -> {self.to_season_id}"
