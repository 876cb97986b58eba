"""Tournaments: a game's competitions with their own boards, windows, resets, entry, capacity and
attempts (docs/api.md, "Tournaments").

A tournament's periods are computed from its window and its `reset` cron expression
(periods.py), never stored one by one in advance. A `TournamentPeriod` row is written only for a
period that reached its end (the freeze); `TournamentEntrant` rows are the durable record of who
entered which period (by joining, or by a first counted result without `join_required`), from
which the Redis seat counters are rebuilt.
"""

from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from seasons.models import Game

TOURNAMENT_ID_VALIDATOR = RegexValidator(r"^[a-z0-9-]{1,40}$", "A tournament id is 1-40 of [a-z0-9-].")
MIN_DURATION_S = 60
MAX_DURATION_S = 31_536_000


class Scoring(models.TextChoices):
    BEST = "best", "best single result"
    SUM = "sum", "sum of counted results"
    LATEST = "latest", "latest counted result"


class Order(models.TextChoices):
    DESC = "desc", "higher is better"
    ASC = "asc", "lower is better"


class Tournament(models.Model):
    """One tournament of a game. `ended_at`: set by `end` (the current period ends then and no
    later period starts). The configuration fields are what the signed PUT sends."""

    game = models.ForeignKey(Game, on_delete=models.PROTECT, related_name="tournaments")
    slug = models.CharField("id", max_length=40, validators=[TOURNAMENT_ID_VALIDATOR])
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    category = models.PositiveSmallIntegerField(default=0, validators=[MaxValueValidator(127)])
    metadata = models.JSONField(default=dict, blank=True)
    scoring = models.CharField(max_length=8, choices=Scoring.choices, default=Scoring.BEST)
    order = models.CharField(max_length=4, choices=Order.choices, default=Order.DESC)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(null=True, blank=True, help_text="Empty: no end (with a reset).")
    duration_s = models.PositiveIntegerField(
        validators=[MinValueValidator(MIN_DURATION_S), MaxValueValidator(MAX_DURATION_S)]
    )
    reset = models.CharField(max_length=100, blank=True, default="", help_text="Cron (UTC); empty: one period.")
    grace_s = models.PositiveIntegerField(default=60)
    max_entrants = models.PositiveIntegerField(null=True, blank=True)
    max_attempts = models.PositiveIntegerField(null=True, blank=True)
    join_required = models.BooleanField(default=False)
    rewards = models.JSONField(default=list, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True, help_text="Set by `end`: no period starts after it.")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["game", "slug"]
        constraints = [models.UniqueConstraint(fields=["game", "slug"], name="tournament_unique_id")]

    def __str__(self) -> str:
        return f"{self.game.slug}/{self.slug}"


class PeriodState(models.TextChoices):
    FINAL = "final"


class TournamentPeriod(models.Model):
    """A period that reached its end: written once, in the transaction that freezes its standings
    (a second freezer finds it and does nothing)."""

    tournament = models.ForeignKey(Tournament, on_delete=models.CASCADE, related_name="periods")
    index = models.PositiveIntegerField()
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    entrants = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=8, choices=PeriodState.choices, default=PeriodState.FINAL)
    finalized_at = models.DateTimeField()

    class Meta:
        ordering = ["tournament", "-index"]
        constraints = [models.UniqueConstraint(fields=["tournament", "index"], name="tournament_period_unique")]

    def __str__(self) -> str:
        return f"{self.tournament} #{self.index}"


class TournamentEntrant(models.Model):
    """A player entered in one period: by joining, or (without `join_required`) by a first
    counted result. The seat counter in Redis is rebuilt from these rows."""

    # No database constraint: a batch of first results writes hundreds (a check per row at commit).
    tournament = models.ForeignKey(
        Tournament, on_delete=models.CASCADE, related_name="entrants", db_constraint=False, db_index=False
    )  # no index of its own: the unique constraint's prefix
    period = models.PositiveIntegerField()
    player_id = models.CharField(max_length=64)
    joined_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tournament", "period", "player_id"], name="tournament_entrant_unique")
        ]

    def __str__(self) -> str:
        return f"{self.tournament} #{self.period}: {self.player_id}"


class TournamentStanding(models.Model):
    """One line of a final period's standings, written once by the freeze (scoring's
    `tournament_period_freeze`) in the transaction that writes its `TournamentPeriod`: every read of
    a final period answers from these rows, also after the period's Redis keys are gone.
    `position` is the 0-based display order (the tournament's order, then who reached the score
    first, then player id); `rank` is the game's tie rule applied; `reward` the band's, attached
    at the freeze."""

    period = models.ForeignKey(TournamentPeriod, on_delete=models.CASCADE, related_name="standings")
    position = models.PositiveIntegerField()
    rank = models.PositiveIntegerField()
    player_id = models.CharField(max_length=64)
    score = models.BigIntegerField()
    attempts = models.PositiveIntegerField()
    reward = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["period", "position"]
        constraints = [
            models.UniqueConstraint(fields=["period", "position"], name="tournament_standing_position"),
            models.UniqueConstraint(fields=["period", "player_id"], name="tournament_standing_player"),
        ]

    def __str__(self) -> str:
        return f"{self.period} {self.rank}. {self.player_id}"


# Leagues (docs/api.md, "Leagues"): their models live in their own module.
from .league_models import (  # noqa: E402, F401
    League,
    LeagueCohort,
    LeagueMember,
    LeaguePeriod,
    LeaguePlayer,
    LeagueStanding,
)
