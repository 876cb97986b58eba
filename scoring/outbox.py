"""Accepted results on their way to the boards: the ledger's outbox.

An accepted `ScoreEvent` has `applied_at` NULL until the board writer (boards/writer.py) has put
it on every board it counts on. `events_apply_by_id` (the worker's task) reads the still-unapplied
events, hands them to the writer, then sets `applied_at`; `unapplied_select` (the relay, on beat)
claims those left behind by a crash or a lost task. The writer's dedup markers make a second
apply of the same event count nothing, so both may run at any time.
"""

import logging
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from boards.writer import ApplyReport, EventRow, events_apply
from common.observability import Histogram, observe_many

from .models import EventStatus, ScoreEvent
from .selectors import json_list

logger = logging.getLogger(__name__)

_TABLE = ScoreEvent._meta.db_table

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


def _id_list(event_ids: list[int]) -> str:
    """The ids as one comma-joined string for `string_to_array(%s, ',')::bigint[]`: psycopg would
    quote a 2,000-element list parameter element by element in Python."""
    return ",".join(map(str, event_ids))


def _unapplied_rows(event_ids: list[int]) -> list[EventRow]:
    # accepted_at as microseconds since the epoch: Django's timestamptz loader (a Python class over
    # psycopg's) was a tenth of the worker's CPU; an integer and one addition make the same value.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, season_id, player_id, points, (extract(epoch FROM accepted_at) * 1000000)::bigint, day, "
            f"region, extra_boards::text FROM {_TABLE} WHERE id = ANY(string_to_array(%s, ',')::bigint[]) "
            "AND status = %s AND applied_at IS NULL ORDER BY id",
            [_id_list(event_ids), EventStatus.ACCEPTED.value],
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
    """Apply the still-unapplied accepted events among `event_ids`, then mark them applied, and
    observe each one's wait since acceptance (`leaderboard_apply_lag_seconds`).

    Idempotent: the ledger filter skips events already applied; the Lua dedup skips events that
    reached Redis but whose `applied_at` was not written (a crash in between). Events the writer
    refuses for overflowing the season's exact capacity become `rejected` (`score_overflow`).
    """
    rows = _unapplied_rows(event_ids)
    report = events_apply(events=rows, dedup_ttl_s=dedup_ttl_s, chunk=chunk)
    now = timezone.now()
    with connection.cursor() as cursor:
        if report.on_boards:
            cursor.execute(
                f"UPDATE {_TABLE} SET applied_at = %s WHERE id = ANY(string_to_array(%s, ',')::bigint[]) "
                "AND applied_at IS NULL",
                [now, _id_list(report.on_boards)],
            )
        if report.refused:
            logger.error("events %s would pass the season's exact score capacity; rejected", report.refused)
            cursor.execute(
                f"UPDATE {_TABLE} SET status = %s, reason = 'score_overflow' WHERE id = ANY(%s::bigint[])",
                [EventStatus.REJECTED.value, report.refused],
            )
    on_boards = set(report.on_boards)
    lags = [(now - row.accepted_at).total_seconds() for row in rows if row.id in on_boards]
    observe_many(APPLY_LAG, lags)
    return OutboxReport(**{f.name: getattr(report, f.name) for f in fields(report)}, lag_max_s=max(lags, default=0.0))


def unapplied_select(*, older_than: datetime, stale_enqueue_before: datetime, limit: int) -> list[int]:
    """Accepted events still unapplied (the outbox), claimed with SKIP LOCKED and stamped."""
    ids = list(
        ScoreEvent.objects.select_for_update(skip_locked=True)
        .filter(status=EventStatus.ACCEPTED, applied_at__isnull=True, accepted_at__lt=older_than)
        .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=stale_enqueue_before))
        .order_by("accepted_at")
        .values_list("id", flat=True)[:limit]
    )
    if ids:
        ScoreEvent.objects.filter(id__in=ids).update(enqueued_at=timezone.now())
    return ids


def unapplied_count(*, limit: int = 1_000_000) -> int:
    """Accepted events not yet on the boards (the outbox's depth; the partial index event_unapplied
    answers it), counted up to `limit`: a scrape stays cheap however deep the backlog."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {_TABLE} WHERE status = %s AND applied_at IS NULL LIMIT %s) AS b",
            [EventStatus.ACCEPTED.value, limit],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0
