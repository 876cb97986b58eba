"""Accepted results on their way to the boards: the ledger's outbox.

An accepted `ScoreEvent` has a row in `UnappliedEvent` until the board writer (boards/writer.py) has
put it on every board it counts on: `outbox_add` writes it in the transaction that accepts the event
(the submission, an approval, a reinstatement), `outbox_applied` deletes it once the event is on the
boards (and records when), `outbox_drop` when the event leaves `accepted` (a revocation, a ban, a
withholding, an overflow). `events_apply_by_id` (the worker's task) reads the events among its ids
that are still in the outbox, hands them to the writer, then, once its Lua call has succeeded,
deletes their rows; `unapplied_select` (the relay, on beat) claims those left behind by a crash or a
lost task. The writer's dedup markers make a second apply of the same event count nothing, so both
may run at any time: a worker killed between the Lua call and the delete leaves the rows, the relay
re-sends them, the script skips them for their markers and the next worker deletes them. Each
apply's delete also records when it applied what (`outbox_applied`, one `ApplyRecord` row): the
dedup marker check needs the time.

The ledger row itself is never updated to mark an apply (docs/performance.md, "Ingest").
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from boards.writer import ApplyReport, EventRow, events_apply
from common.db import ID_ARRAY, id_list
from common.observability import Histogram, observe_many

from .entries import competition_boards_of, competition_rewrites, tournament_results_withdrawn
from .league_corrections import league_results_withdrawn
from .league_entries import league_boards_of
from .models import ApplyRecord, EventStatus, ScoreEvent, UnappliedEvent
from .selectors import json_list

logger = logging.getLogger(__name__)

_TABLE = ScoreEvent._meta.db_table
_OUTBOX = UnappliedEvent._meta.db_table
_RECORDS = ApplyRecord._meta.db_table

APPLY_LAG = Histogram(
    "leaderboard_apply_lag_seconds",
    "From a result's acceptance (accepted_at, before its 2xx) to its events on the boards, per applied event.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0),
)


@dataclass
class OutboxReport(ApplyReport):
    lag_max_s: float = 0.0  # the longest wait from acceptance to the boards among the events applied


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def outbox_add(events: Sequence[tuple[int, datetime]], *, accepted_at: datetime) -> None:
    """Put accepted events, (id, played_at) each, in the outbox (in the transaction that accepts
    them): one INSERT, the ids and their times (microseconds since the epoch, exact) as two
    parameters. An event already there gets the new accept time and is due again."""
    if not events:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_OUTBOX} (event_id, played_at, accepted_at) "
            f"SELECT id, 'epoch'::timestamptz + micros * interval '1 microsecond', %s "
            f"FROM unnest({ID_ARRAY}, string_to_array(%s, ',')::bigint[]) AS e(id, micros) "
            "ON CONFLICT (event_id) DO UPDATE SET accepted_at = EXCLUDED.accepted_at, enqueued_at = NULL",
            [
                accepted_at,
                id_list([event_id for event_id, _ in events]),
                ",".join(str(_micros(played_at)) for _, played_at in events),
            ],
        )


def _micros(moment: datetime) -> int:
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def outbox_drop(event_ids: list[int]) -> int:
    """Take events that are no longer accepted out of the outbox (in the transaction that changes
    their status; applied ones go through `outbox_applied`). Returns how many were there."""
    if not event_ids:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {_OUTBOX} WHERE event_id = ANY({ID_ARRAY})", [id_list(event_ids)])
        return int(cursor.rowcount)


def outbox_applied(event_ids: list[int]) -> int:
    """Take applied events out of the outbox (their Lua call succeeded, or a rebuild swapped in
    boards that hold them) and record when (`ApplyRecord`: one row for the lot, written by the same
    statement). Only the events this delete found are recorded: one applied again (a resend after a
    crash, skipped for its marker) keeps its first time. Returns how many it found."""
    if not event_ids:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH gone AS (DELETE FROM {_OUTBOX} WHERE event_id = ANY({ID_ARRAY}) RETURNING event_id) "
            f"INSERT INTO {_RECORDS} (applied_at, event_ids, first_id, last_id) "
            "SELECT %s, array_agg(event_id ORDER BY event_id), min(event_id), max(event_id) "
            "FROM gone HAVING count(*) > 0 RETURNING cardinality(event_ids)",
            [id_list(event_ids), timezone.now()],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def _unapplied_rows(event_ids: list[int]) -> list[EventRow]:
    # accepted_at as microseconds since the epoch: Django's timestamptz loader (a Python class over
    # psycopg's) was a tenth of the worker's CPU; an integer and one addition make the same value.
    # The events still in the outbox, each found by its primary key in both tables, in the months of
    # their played_at only: the bounds, computed once (InitPlans) before the ledger is read, leave
    # the other months' partitions out whatever the join's plan (a nested loop would prune by the
    # row's played_at anyway; a hash join, chosen for a large batch, would scan every month). The outbox's
    # part is a MATERIALIZED CTE: as a join, the planner estimated it from the actual ends of the
    # outbox's primary key, walking the index entries of every row deleted since the last VACUUM
    # (measured: 7.9 ms of planning for a task of 630 events with 330,000 dead rows; 0.2 ms so).
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH waiting AS MATERIALIZED (SELECT event_id, played_at FROM {_OUTBOX} "
            f"WHERE event_id = ANY({ID_ARRAY})) "
            "SELECT e.id, e.season_id, e.player_id, e.points, (extract(epoch FROM e.accepted_at) * 1000000)::bigint, "
            f"e.day, e.region, e.extra_boards::text FROM waiting JOIN {_TABLE} e ON e.id = waiting.event_id "
            "AND e.played_at = waiting.played_at "
            "AND e.played_at >= (SELECT min(played_at) FROM waiting) "
            "AND e.played_at <= (SELECT max(played_at) FROM waiting) "
            "WHERE e.status = %s ORDER BY e.id",
            [id_list(event_ids), EventStatus.ACCEPTED.value],
        )
        return [
            EventRow(
                event_id,
                season_id,
                player_id,
                points,
                _EPOCH + micros * _MICROSECOND,
                day,
                region,
                () if extra == "[]" else tuple(json_list(extra)),
            )
            for event_id, season_id, player_id, points, micros, day, region, extra in cursor.fetchall()
        ]


def events_apply_by_id(*, event_ids: list[int], dedup_ttl_s: int, chunk: int = 2000) -> OutboxReport:
    """Apply the events among `event_ids` still in the outbox, then take them out of it, and
    observe each one's wait since acceptance (`leaderboard_apply_lag_seconds`).

    Idempotent: events no longer in the outbox (applied) are not read; the Lua dedup skips events
    that reached Redis but whose outbox row was not deleted (a crash in between). The rows go only
    after the Lua call succeeded: "applied" is never durable before the boards hold the event.
    Events the writer refuses for overflowing the season's exact capacity become `rejected`
    (`score_overflow`) and leave the outbox in the same transaction. Paused events (a rebuild)
    stay: the task is retried a moment later (tasks.py), the relay after that.
    """
    rows = _unapplied_rows(event_ids)
    competitions = competition_boards_of(rows)
    competitions.added.update(league_boards_of(rows))  # leagues: the cohort boards, by the same apply
    report = events_apply(events=rows, dedup_ttl_s=dedup_ttl_s, chunk=chunk, competitions=competitions.added)
    paused = competition_rewrites(competitions)
    if paused:  # a rebuild: those stay in the outbox, for the relay (their season boards skip them then)
        report.on_boards = [event_id for event_id in report.on_boards if event_id not in paused]
        report.paused += len(paused)
    now = timezone.now()
    outbox_applied(report.on_boards)
    if report.refused:
        logger.error("events %s would pass the season's exact score capacity; rejected", report.refused)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {_TABLE} SET status = %s, reason = 'score_overflow' WHERE id = ANY(%s::bigint[])",
                [EventStatus.REJECTED.value, report.refused],
            )
            outbox_drop(report.refused)
        # Counted in a tournament: off its board again, its attempt given back.
        tournament_results_withdrawn(event_ids=report.refused, now=now)
        league_results_withdrawn(event_ids=report.refused, now=now)
    on_boards = set(report.on_boards)
    lags = [(now - row.accepted_at).total_seconds() for row in rows if row.id in on_boards]
    observe_many(APPLY_LAG, lags)
    return OutboxReport(**{f.name: getattr(report, f.name) for f in fields(report)}, lag_max_s=max(lags, default=0.0))


def unapplied_select(*, older_than: datetime, stale_enqueue_before: datetime, limit: int) -> list[int]:
    """Accepted events still unapplied (the outbox's rows, by flag: never by an id watermark, which
    would skip rows committed out of order), the oldest first, claimed with SKIP LOCKED and
    stamped in one statement (in the caller's transaction). Returns their ids in id order."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_OUTBOX} SET enqueued_at = %s WHERE event_id IN (SELECT event_id FROM {_OUTBOX} "
            "WHERE accepted_at < %s AND (enqueued_at IS NULL OR enqueued_at < %s) ORDER BY accepted_at LIMIT %s "
            "FOR UPDATE SKIP LOCKED) RETURNING event_id",
            [timezone.now(), older_than, stale_enqueue_before, limit],
        )
        return sorted(int(row[0]) for row in cursor.fetchall())


def unapplied_due_now() -> int:
    """Every unapplied event due for the relay's next sweep, however recently it was enqueued: after
    a Redis failover the queue may have lost their apply tasks (scoring/failover.py). Returns how
    many were waiting to be sent again."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {_OUTBOX} SET enqueued_at = NULL WHERE enqueued_at IS NOT NULL")
        return int(cursor.rowcount)


def unapplied_count(*, limit: int = 1_000_000) -> int:
    """Accepted events not yet on the boards (the outbox's depth), counted up to `limit`: a scrape
    stays cheap however deep the backlog."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM {_OUTBOX} LIMIT %s) AS b", [limit])
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def apply_records_prune(*, before: datetime) -> int:
    """Delete the apply records older than `before` (the markers' lifetime: the check judges no
    older apply). A range of their time's index."""
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {_RECORDS} WHERE applied_at < %s", [before])
        return int(cursor.rowcount)


VACUUM_DEAD_MIN = 50_000  # dead outbox rows (deleted: applied) before the relay vacuums the table itself


def outbox_vacuum(*, dead_min: int = VACUUM_DEAD_MIN) -> list[str]:
    """VACUUM the outbox (and the apply records) when their deleted rows pile up; returns the tables
    vacuumed. Every accepted event leaves a dead row in the outbox once applied; autovacuum reclaims
    them in a deployment that runs it (a table this small and busy is vacuumed within its naptime),
    and this does it where nobody does (a database with autovacuum off, as on the benchmark
    machine): otherwise the relay's and the lag's scans of the table would read every row ever
    deleted. 46 ms for 330,000 dead rows (about 25 B of WAL per event, mostly full-page images);
    it takes no lock that the inserts, deletes or the relay wait for, except to truncate empty
    pages at the end (after a backlog drained), which it tries only without waiting and gives up
    as soon as another backend waits. Not inside a transaction (VACUUM cannot run there)."""
    if connection.in_atomic_block:
        return []
    vacuumed = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, n_dead_tup, n_live_tup FROM pg_stat_user_tables WHERE relname IN (%s, %s)",
            [_OUTBOX, _RECORDS],
        )
        for table, dead, live in cursor.fetchall():
            threshold = max(dead_min if table == _OUTBOX else 1000, 4 * int(live))
            if int(dead) >= threshold:
                cursor.execute(f"VACUUM {table}")
                vacuumed.append(table)
                logger.info("relay: vacuumed %s (%d dead rows)", table, int(dead))
    return vacuumed
