"""The ledger's two big tables become PostgreSQL declarative partitions by month (issue: the ledger
for years): `scoring_scoreevent` by RANGE (played_at), `scoring_matchsubmission` by RANGE
(played_month), a new column. Rows already stored are copied into their months' partitions; the
ids go on from where they were. The outbox gains the events' played_at (the worker reads each event
from its month's partition only).

Offline: the copy holds both tables for its length (a deployment with a large ledger runs it in a
maintenance window; docs/operations.md, "Retention").
"""

from datetime import UTC, date, datetime

from django.db import migrations, models

EVENTS = "scoring_scoreevent"
CLAIMS = "scoring_matchsubmission"
OUTBOX = "scoring_unappliedevent"


def _month(moment: datetime) -> date:
    moment = moment.astimezone(UTC)
    return date(moment.year, moment.month, 1)


def _after(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def _partition_sql(month: date) -> list[str]:
    following = _after(month)
    start = datetime(month.year, month.month, 1, tzinfo=UTC).isoformat()
    end = datetime(following.year, following.month, 1, tzinfo=UTC).isoformat()
    suffix = f"_y{month.year:04d}m{month.month:02d}"
    return [
        f"CREATE TABLE {EVENTS}{suffix} PARTITION OF {EVENTS} FOR VALUES FROM ('{start}') TO ('{end}')",
        f"CREATE TABLE {CLAIMS}{suffix} PARTITION OF {CLAIMS} "
        f"FOR VALUES FROM ('{month.isoformat()}') TO ('{following.isoformat()}')",
    ]


def forward(apps, schema_editor):
    run = schema_editor.execute
    with schema_editor.connection.cursor() as cursor:
        # The claims' month: that of their match's events (every claim has at least one); a claim
        # without any (none should exist) takes the month it was made in.
        run(f"ALTER TABLE {CLAIMS} ADD COLUMN played_month date")
        run(
            f"UPDATE {CLAIMS} c SET played_month = m.month FROM (SELECT game_id, match_id, "
            f"date_trunc('month', min(played_at) AT TIME ZONE 'UTC')::date AS month FROM {EVENTS} "
            "GROUP BY game_id, match_id) m WHERE m.game_id = c.game_id AND m.match_id = c.match_id"
        )
        run(
            f"UPDATE {CLAIMS} SET played_month = date_trunc('month', created_at AT TIME ZONE 'UTC')::date "
            "WHERE played_month IS NULL"
        )
        run(f"ALTER TABLE {OUTBOX} ADD COLUMN played_at timestamptz")
        run(f"UPDATE {OUTBOX} o SET played_at = e.played_at FROM {EVENTS} e WHERE e.id = o.event_id")
        run(f"DELETE FROM {OUTBOX} WHERE played_at IS NULL")  # its event is gone: nothing to apply
        run(f"ALTER TABLE {OUTBOX} ALTER COLUMN played_at SET NOT NULL")

        # The old tables step aside (their indexes' names too: the new ones take them).
        for table, names in [
            (
                EVENTS,
                [
                    "scoring_scoreevent_pkey",
                    "event_pending_queue",
                    "event_pending_review",
                    "event_reviewed",
                    "event_season_player",
                    "event_unique_match_player",
                ],
            ),
            (CLAIMS, ["scoring_matchsubmission_pkey", "submission_unique_match"]),
        ]:
            run(f"ALTER TABLE {table} RENAME TO {table}_unpartitioned")
            for name in names:
                run(f"ALTER INDEX {name} RENAME TO {name}_unpartitioned")
        run(
            f"CREATE TABLE {EVENTS} (LIKE {EVENTS}_unpartitioned INCLUDING DEFAULTS INCLUDING IDENTITY "
            "INCLUDING CONSTRAINTS) PARTITION BY RANGE (played_at)"
        )
        run(f"ALTER TABLE {EVENTS} ADD CONSTRAINT scoring_scoreevent_pkey PRIMARY KEY (id, played_at)")
        run(
            f"ALTER TABLE {EVENTS} ADD CONSTRAINT event_unique_match_player "
            "UNIQUE (game_id, match_id, player_id, played_at)"
        )
        run(
            f"CREATE INDEX event_pending_queue ON {EVENTS} (accepted_at, id) WHERE status = 'pending_review'"
        )
        run(
            f"CREATE INDEX event_pending_review ON {EVENTS} (game_id, accepted_at) WHERE status = 'pending_review'"
        )
        run(f"CREATE INDEX event_reviewed ON {EVENTS} (reviewed_at DESC) WHERE reviewed_at IS NOT NULL")
        run(f"CREATE INDEX event_season_player ON {EVENTS} (season_id, player_id)")
        run(
            f"CREATE TABLE {CLAIMS} (LIKE {CLAIMS}_unpartitioned INCLUDING DEFAULTS INCLUDING IDENTITY "
            "INCLUDING CONSTRAINTS) PARTITION BY RANGE (played_month)"
        )
        run(f"ALTER TABLE {CLAIMS} ALTER COLUMN played_month SET NOT NULL")
        run(f"ALTER TABLE {CLAIMS} ADD CONSTRAINT scoring_matchsubmission_pkey PRIMARY KEY (id, played_month)")
        run(
            f"ALTER TABLE {CLAIMS} ADD CONSTRAINT submission_unique_match UNIQUE (game_id, match_id, played_month)"
        )

        # A partition for every month with rows, and for this month and the next three.
        cursor.execute(f"SELECT DISTINCT date_trunc('month', played_at AT TIME ZONE 'UTC')::date FROM {EVENTS}_unpartitioned")
        months = {row[0] for row in cursor.fetchall()}
        cursor.execute(f"SELECT DISTINCT played_month FROM {CLAIMS}_unpartitioned")
        months |= {row[0] for row in cursor.fetchall()}
        month = _month(datetime.now(UTC))
        for _ in range(4):
            months.add(month)
            month = _after(month)
        for month in sorted(months):
            for statement in _partition_sql(month):
                run(statement)

        for table in (EVENTS, CLAIMS):
            run(f"INSERT INTO {table} SELECT * FROM {table}_unpartitioned")
            run(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"greatest((SELECT max(id) FROM {table}_unpartitioned), 1), "
                f"(SELECT max(id) FROM {table}_unpartitioned) IS NOT NULL)"
            )
            run(f"DROP TABLE {table}_unpartitioned")  # and its sequence: the new one takes its name
            run(f"ALTER SEQUENCE {table}_id_seq1 RENAME TO {table}_id_seq")
            run(f"ANALYZE {table}")


class Migration(migrations.Migration):
    dependencies = [("scoring", "0016_ledger_rows_fewer_indexes")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forward, migrations.RunPython.noop)],
            state_operations=[
                migrations.RemoveConstraint(model_name="matchsubmission", name="submission_unique_match"),
                migrations.AddField(
                    model_name="matchsubmission",
                    name="played_month",
                    field=models.DateField(help_text="The first day of the UTC month of the match's played_at."),
                    preserve_default=False,
                ),
                migrations.AddConstraint(
                    model_name="matchsubmission",
                    constraint=models.UniqueConstraint(
                        fields=("game", "match_id", "played_month"), name="submission_unique_match"
                    ),
                ),
                migrations.RemoveConstraint(model_name="scoreevent", name="event_unique_match_player"),
                migrations.AddConstraint(
                    model_name="scoreevent",
                    constraint=models.UniqueConstraint(
                        fields=("game", "match_id", "player_id", "played_at"), name="event_unique_match_player"
                    ),
                ),
                migrations.AddField(
                    model_name="unappliedevent",
                    name="played_at",
                    field=models.DateTimeField(
                        help_text="The event's played_at: the worker reads it from its month's partition."
                    ),
                    preserve_default=False,
                ),
            ],
        )
    ]
