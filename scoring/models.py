"""The ledger: the truth every Redis board is rebuilt from.

A `MatchSubmission` holds the first answer to a match id (idempotent replays); a `ScoreEvent` is
one player's result in one match, stored with its status whatever it is. An accepted event not yet
on the boards has a row in `UnappliedEvent` (the outbox), written in the transaction that accepts it
and deleted once the board writer has applied it; the relay re-sends those left there.
"""

from django.contrib.postgres.fields import ArrayField
from django.db import models


class EventStatus(models.TextChoices):
    ACCEPTED = "accepted"
    PENDING_REVIEW = "pending_review"
    REJECTED = "rejected"
    REVOKED = "revoked"


# Foreign keys whose column leads a composite index go without an index of their own
# (db_index=False): the composite serves every lookup by it, and one index less is less work for
# every insert. (A lone index on game_id also tempted the planner, on a fresh game whose statistics
# lagged, into scanning the whole game instead of probing the composite.)
#
# The rows written for every result (events, submissions, season totals; players and season
# regions in boards) reference their game and season without a database constraint
# (db_constraint=False): PostgreSQL checks a constraint once per row at commit, locking the one
# game or season row FOR KEY SHARE from every concurrent batch, measured at 6-7 ms per 500 events
# (COPY 12 ms, commit 7 ms; 0.8 ms without). The ids come from rows the service has just read;
# on_delete=PROTECT still stops a game or season with results from being deleted through Django.


# The ledger is two tables partitioned by month in PostgreSQL (migration 0017; ledger_partitions.py):
# the events by `played_at`, the claims by `played_month`. A partitioned table's primary key and
# unique indexes include its partition key: the events' primary key is (id, played_at) in the
# database (Django still addresses a row by `id`, which its sequence keeps unique), and the claim's
# unique index is (game, match_id, played_month).


class MatchSubmission(models.Model):
    """A match id's claim and first answer: the idempotency guard (one per game, match id and month
    of play)."""

    game = models.ForeignKey("seasons.Game", on_delete=models.PROTECT, db_index=False, db_constraint=False)
    match_id = models.UUIDField()
    played_month = models.DateField(help_text="The first day of the UTC month of the match's played_at.")
    content_hash = models.CharField(max_length=64)
    answer = models.JSONField()
    key_id = models.CharField(max_length=40)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["game", "match_id", "played_month"], name="submission_unique_match")
        ]

    def __str__(self) -> str:
        return str(self.match_id)


class ScoreEvent(models.Model):
    game = models.ForeignKey("seasons.Game", on_delete=models.PROTECT, db_index=False, db_constraint=False)
    season = models.ForeignKey("seasons.Season", on_delete=models.PROTECT, db_index=False, db_constraint=False)
    match_id = models.UUIDField()
    player_id = models.CharField(max_length=64)
    points = models.BigIntegerField()
    played_at = models.DateTimeField()
    accepted_at = models.DateTimeField(help_text="The service's clock when it took the result: 'reached' for ties.")
    duration_s = models.PositiveIntegerField()
    day = models.DateField()
    week = models.CharField(max_length=8)
    region = models.CharField(max_length=16, null=True, blank=True, help_text="The region board it counts on.")
    requested_region = models.CharField(
        max_length=16,
        null=True,
        blank=True,
        help_text="The region the result named, when the season's fixed region overrode it (the rule applied).",
    )
    extra_boards = models.JSONField(
        default=list, blank=True, help_text='Boards of the game\'s extra dimensions, e.g. ["country-de"].'
    )
    status = models.CharField(max_length=16, choices=EventStatus.choices)
    reason = models.CharField(max_length=40, blank=True, default="")
    reviewed_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a moderator decided it (approved, revoked, reinstated): never re-flagged; the review queue's "
        "resolved list.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["game", "match_id", "player_id", "played_at"], name="event_unique_match_player"
            ),
        ]
        indexes = [
            models.Index(fields=["season", "player_id"], name="event_season_player"),
            # The review queue and the anomaly job's releases: few rows, so nearly free to keep.
            models.Index(
                fields=["game", "accepted_at"], name="event_pending_review", condition=models.Q(status="pending_review")
            ),
            # The review queue's order (oldest first) across games: a page reads its 50 rows, not
            # every pending row. Pending rows only, like the one above.
            models.Index(
                fields=["accepted_at", "id"], name="event_pending_queue", condition=models.Q(status="pending_review")
            ),
            # The review queue's resolved list: only decided rows (a NULL, every new result, is
            # never inserted into a partial index, so ingest does not pay for it).
            models.Index(fields=["-reviewed_at"], name="event_reviewed", condition=models.Q(reviewed_at__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.match_id}/{self.player_id}"


class TournamentResult(models.Model):
    """A result entered in a tournament a match named, and its verdict there (docs/api.md,
    "Counting"): the ledger's record of it, written in the transaction that stores the result, so
    a rebuild of a tournament's boards and counters needs nothing else. `period` is null for
    `outside_period`. The attempts a player used in a period are the rows `counted` of results
    still `accepted`."""

    # No database constraints (a check per row at commit, for every result a match names in a
    # tournament): written with the event, in its transaction, as the ledger's other rows are.
    # No index of their own either: (event, tournament) is the unique constraint's and (tournament,
    # period, player_id) the other index's prefix; each index more cost the ingest about 10 us of
    # PostgreSQL CPU per entry (docs/performance.md, "Tournaments").
    event = models.ForeignKey(
        ScoreEvent, on_delete=models.CASCADE, related_name="tournament_results", db_constraint=False, db_index=False
    )
    tournament = models.ForeignKey(
        "competitions.Tournament", on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    period = models.PositiveIntegerField(null=True, blank=True)
    player_id = models.CharField(max_length=64)
    verdict = models.CharField(max_length=20)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["event", "tournament"], name="tournament_result_unique")]
        indexes = [models.Index(fields=["tournament", "period", "player_id"], name="tournament_result_player")]

    def __str__(self) -> str:
        return f"{self.event_id} in {self.tournament_id}: {self.verdict}"


class UnappliedEvent(models.Model):
    """The outbox: one row per accepted event that is not on the boards yet.

    Written with the event, in the transaction that accepts it (or that approves or reinstates it),
    and deleted by the worker once the board writer's Lua call has applied it (or a rebuild swapped
    in boards that hold it); a status change away from `accepted` (revoke, ban, withholding, an
    overflow) deletes it too. So the table holds exactly the accepted, unapplied events: the relay,
    the lag and the metrics read this small table, and the ledger row is never updated to mark an
    apply. (An `applied_at` UPDATE of the ledger row was as costly as the row's COPY: a new version
    of a wide row and an entry in each of its indexes, since its partial index covered the column;
    deleting a narrow row here writes about a tenth of the WAL: docs/performance.md, "Ingest".)

    No foreign key constraint (a check per row at commit, a lock on the ledger row) and no index but
    the primary key: the worker deletes by event id, the relay and the lag read the whole table,
    which holds a few seconds of ingest.
    """

    event = models.OneToOneField(
        ScoreEvent,
        on_delete=models.DO_NOTHING,
        primary_key=True,
        db_constraint=False,
        related_name="unapplied",
    )
    accepted_at = models.DateTimeField(help_text="The event's accepted_at (the relay's and the lag's clock).")
    played_at = models.DateTimeField(help_text="The event's played_at: the worker reads it from its month's partition.")
    enqueued_at = models.DateTimeField(null=True, blank=True, help_text="Last re-enqueue by the relay.")

    def __str__(self) -> str:
        return str(self.event_id)


class ApplyRecord(models.Model):
    """When events were applied: one row per apply (a worker's call, a rebuild's swap) listing the
    events it took out of the outbox, written by the same statement as that delete.

    The dedup marker check (unreflected.py) judges only events applied since the boards marker was
    written and within the markers' lifetime, so it needs each event's apply time; a row per apply
    holds it for a few bytes of WAL per event instead of an UPDATE of each ledger row. Rows older
    than the markers' lifetime (SCORING_DEDUP_TTL_S) are pruned by the relay (`outbox.py`).
    """

    applied_at = models.DateTimeField(db_index=True)
    event_ids = ArrayField(models.BigIntegerField())
    first_id = models.BigIntegerField(help_text="The smallest of event_ids (the check reads its id range's records).")
    last_id = models.BigIntegerField(help_text="The largest of event_ids.")

    def __str__(self) -> str:
        return f"{self.applied_at}: {len(self.event_ids)} events"


class SeasonTotal(models.Model):
    """A player's accepted points in a season, kept in the submission transaction.

    It answers "would this result pass the season's exact capacity?" with one upsert per batch,
    however long the player's history (summing their events would grow with it).
    """

    season = models.ForeignKey("seasons.Season", on_delete=models.PROTECT, db_index=False, db_constraint=False)
    player_id = models.CharField(max_length=64)
    points = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["season", "player_id"], name="season_total_unique")]

    def __str__(self) -> str:
        return f"{self.player_id}: {self.points}"


class AnomalyScan(models.Model):
    """Where the anomaly job stands for a game: the limit it last computed over the whole window,
    with which policy, and the event ids it has checked against it (moderation.anomalies_review)."""

    game = models.OneToOneField("seasons.Game", on_delete=models.CASCADE, primary_key=True)
    limit = models.BigIntegerField(null=True, help_text="Most points a result may have; empty: cohort too small.")
    policy = models.CharField(max_length=64, help_text="quantile/min cohort/window days it was computed with.")
    computed_at = models.DateTimeField()
    checked_from_id = models.BigIntegerField(help_text="The next run checks events from this id on.")
    checked_to_id = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.game_id}: {self.limit}"


class ReviewItem(ScoreEvent):
    """The moderators' review queue: the ledger's events seen through the admin's review page."""

    class Meta:
        proxy = True
        verbose_name = "review item"


# Leagues: the ledger's record of the cohort each result counts in (its own module).
from .league_models import LeagueResult  # noqa: E402, F401
