"""Leagues: a game's players sorted into ordered divisions and, every period, into small cohorts
that compete; at each period's end the best of each cohort move up a division and the worst move
down (docs/api.md, "Leagues").

Periods are computed from `starts_at` and the `reset` cron expression, as a tournament's are
(league_periods.py). The rows:
- `League`: the configuration the signed PUT sends; `divisions` lowest first.
- `LeagueMember`: a player's cohort in one period (division index, cohort number), written in the
  transaction of the player's first accepted result of the period; the Redis assignment state
  (league_keys.py) is an index of these rows and is rebuilt from them.
- `LeagueCohort`: one cohort of one period, written with its first member; `final_at` is set once,
  by the period's end, in the transaction that freezes its standings (`LeagueStanding`) and
  publishes its `league.cohort_final` event.
- `LeaguePeriod`: a period whose end has begun (`closing`) or is done (`final`).
- `LeaguePlayer`: each player's division now, as their last period's end left it (no row: the
  lowest division). `period` is the period whose end set it.
The ledger's record of which results counted in which cohort (`LeagueResult`) is scoring's.
"""

from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from seasons.models import Game

LEAGUE_ID_VALIDATOR = RegexValidator(r"^[a-z0-9-]{1,40}$", "A league id is 1-40 of [a-z0-9-].")
MIN_COHORT_SIZE, MAX_COHORT_SIZE = 2, 1000
MIN_DIVISIONS, MAX_DIVISIONS = 2, 20
LEAGUE_GRACE_S = 60


class LeagueScoring(models.TextChoices):
    SUM = "sum", "points over the period"
    BEST = "best", "best single result"


class League(models.Model):
    """One league of a game. `divisions`: [{"name", "promote", "demote"}], lowest first."""

    game = models.ForeignKey(Game, on_delete=models.PROTECT, related_name="leagues")
    slug = models.CharField("id", max_length=40, validators=[LEAGUE_ID_VALIDATOR])
    title = models.CharField(max_length=200)
    starts_at = models.DateTimeField()
    reset = models.CharField(max_length=100, help_text="Cron (UTC): a period starts at each fire.")
    cohort_size = models.PositiveIntegerField(
        validators=[MinValueValidator(MIN_COHORT_SIZE), MaxValueValidator(MAX_COHORT_SIZE)]
    )
    scoring = models.CharField(max_length=8, choices=LeagueScoring.choices, default=LeagueScoring.SUM)
    demote_idle = models.BooleanField(default=False)
    divisions = models.JSONField(help_text='Lowest first: [{"name": "bronze", "promote": 10, "demote": 0}, ...]')
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["game", "slug"]
        constraints = [models.UniqueConstraint(fields=["game", "slug"], name="league_unique_id")]

    def __str__(self) -> str:
        return f"{self.game.slug}/{self.slug}"

    @property
    def division_names(self) -> list[str]:
        return [d["name"] for d in self.divisions]


class LeaguePeriodState(models.TextChoices):
    CLOSING = "closing"  # its end has begun: cohorts are being frozen
    FINAL = "final"  # every cohort frozen, every division written


class LeaguePeriod(models.Model):
    """A period whose end has begun: created once (the league's row locked), then `final` once
    every cohort is frozen and the idle players are moved."""

    league = models.ForeignKey(League, on_delete=models.CASCADE, related_name="periods")
    index = models.PositiveIntegerField()
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    state = models.CharField(max_length=8, choices=LeaguePeriodState.choices, default=LeaguePeriodState.CLOSING)
    cohorts = models.PositiveIntegerField(default=0)
    players = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField()
    finalized_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["league", "-index"]
        constraints = [models.UniqueConstraint(fields=["league", "index"], name="league_period_unique")]

    def __str__(self) -> str:
        return f"{self.league} #{self.index}"


class LeagueCohort(models.Model):
    """A cohort: (period, division, number) of a league; numbers count from 1 per division and
    period. `final_at` is set by the period's end, with its standings."""

    league = models.ForeignKey(League, on_delete=models.CASCADE, related_name="cohorts")
    period = models.PositiveIntegerField()
    division = models.PositiveSmallIntegerField()
    number = models.PositiveIntegerField()
    players = models.PositiveIntegerField(default=0, help_text="Set when it is frozen.")
    final_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["league", "-period", "division", "number"]
        constraints = [
            models.UniqueConstraint(fields=["league", "period", "division", "number"], name="league_cohort_unique")
        ]
        indexes = [models.Index(fields=["league", "period", "final_at"], name="league_cohort_open")]

    def __str__(self) -> str:
        return f"{self.league} #{self.period} {self.division}:{self.number}"


class LeagueMember(models.Model):
    """A player's cohort in one period, written with their first accepted result of it."""

    # Written in every submission that seats players: no index of its own (the unique key starts
    # with it) and no constraint checked per row, as the ledger's rows.
    league = models.ForeignKey(
        League, on_delete=models.CASCADE, related_name="members", db_constraint=False, db_index=False
    )
    period = models.PositiveIntegerField()
    player_id = models.CharField(max_length=64)
    division = models.PositiveSmallIntegerField()
    number = models.PositiveIntegerField()
    joined_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["league", "period", "player_id"], name="league_member_unique")]
        indexes = [models.Index(fields=["league", "period", "division", "number"], name="league_member_cohort")]

    def __str__(self) -> str:
        return f"{self.league} #{self.period} {self.division}:{self.number} {self.player_id}"


class LeaguePlayer(models.Model):
    """A player's division now: what the end of `period` (their last period, or an idle one with
    `demote_idle`) gave them. No row: the lowest division."""

    # Every player's row is rewritten at each period's end: no index of its own (the unique key
    # starts with it) and no constraint checked per row.
    league = models.ForeignKey(
        League, on_delete=models.CASCADE, related_name="players", db_index=False, db_constraint=False
    )
    player_id = models.CharField(max_length=64)
    division = models.PositiveSmallIntegerField()
    period = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["league", "player_id"], name="league_player_unique")]

    def __str__(self) -> str:
        return f"{self.league} {self.player_id}: {self.division}"


class LeagueOutcome(models.TextChoices):
    PROMOTED = "promoted"
    STAYED = "stayed"
    DEMOTED = "demoted"


class LeagueStanding(models.Model):
    """One line of a frozen cohort: `position` 0-based in the tie rule's display order, `rank` by
    the game's tie rule, the outcome and the division it gave."""

    # A period's end writes a million of these at once: no index on the cohort alone (the unique
    # position key starts with it) and no constraints checked per row (the end writes them from
    # the rows it has just claimed).
    cohort = models.ForeignKey(
        LeagueCohort, on_delete=models.CASCADE, related_name="standings", db_index=False, db_constraint=False
    )
    league = models.ForeignKey(League, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False)
    period = models.PositiveIntegerField()
    position = models.PositiveIntegerField()
    rank = models.PositiveIntegerField()
    player_id = models.CharField(max_length=64)
    score = models.BigIntegerField()
    outcome = models.CharField(max_length=8, choices=LeagueOutcome.choices)
    division_to = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["cohort", "position"]
        constraints = [
            models.UniqueConstraint(fields=["cohort", "position"], name="league_standing_position"),
        ]
        indexes = [models.Index(fields=["league", "player_id", "period"], name="league_standing_player")]

    def __str__(self) -> str:
        return f"{self.cohort} {self.rank}. {self.player_id}"
