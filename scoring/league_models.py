"""The ledger's record of results counting in leagues (docs/api.md, "Leagues")."""

from django.db import models


class LeagueResult(models.Model):
    """An accepted result played in a league's period, and the cohort it counts in (division index
    and cohort number), written in the transaction that stores the result: a cohort's standings, its
    board and a rebuild read these rows (with the result's status: only results still `accepted`
    count). `number` null: the player's cohort is not decided yet (their division waits for the end
    of an earlier period); the period's end before it assigns them and fills it in."""

    # No database constraints and no index of their own (as TournamentResult, scoring/models.py):
    # (event, league) is the unique constraint's, and league the cohort index's prefix. No index by
    # player: a player's cohorts are their LeagueMember rows (seats), and an index of random text
    # keys cost as much as the other three together on every accepted league result (5 of 10 us a
    # row, measured inserting 200,000 rows).
    event = models.ForeignKey(
        "scoring.ScoreEvent",
        on_delete=models.CASCADE,
        related_name="league_results",
        db_constraint=False,
        db_index=False,
    )
    league = models.ForeignKey(
        "competitions.League", on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    period = models.PositiveIntegerField()
    player_id = models.CharField(max_length=64)
    division = models.PositiveSmallIntegerField(null=True, blank=True)
    number = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["event", "league"], name="league_result_unique")]
        indexes = [
            models.Index(fields=["league", "period", "division", "number"], name="league_result_cohort"),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} in {self.league_id} #{self.period}: {self.division}:{self.number}"
