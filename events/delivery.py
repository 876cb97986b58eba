"""The dispatcher's database side: claim due deliveries, record how their tries went.

Both run in one transaction per round of the dispatcher (`dispatch_round`). A claim takes, for
each webhook with free places (WEBHOOK_CONCURRENCY less its tries in flight in this process), its
due deliveries with `FOR UPDATE SKIP LOCKED` and stamps them `claimed_until`
(now + WEBHOOK_LEASE_S): another dispatcher skips them, and a dispatcher killed mid-try leaves them
due again once the lease is over. A record writes every try (DeliveryAttempt) and each delivery's
new state in one transaction: delivered on a 2xx, else its next try by the schedule, or failed past
its deadline. A 2xx also brings the webhook's retries whose last try got no answer (refused, timed
out) forward to now: the receiver is back. Retries after an answer (a 500 for that event) keep
their time, so one event a receiver keeps refusing is not tried again at each success of another.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from seasons.models import Game

from .models import Delivery, DeliveryAttempt, DeliveryStatus, Event, Webhook
from .schedule import Schedule
from .selectors import event_body

_EVENT = Event._meta.db_table
_DELIVERY = Delivery._meta.db_table
_WEBHOOK = Webhook._meta.db_table
_ATTEMPT = DeliveryAttempt._meta.db_table
_GAME = Game._meta.db_table
HEAD_BYTES = 1024  # of a receiver's answer, kept with the try
ERROR_CHARS = 200


@dataclass(frozen=True)
class Job:
    """One claimed delivery: what to POST where, signed with which secret."""

    delivery_id: int
    webhook_id: int
    url: str
    secret: str
    feed_id: int
    body: bytes
    attempts: int  # tries of this round before this one
    deadline_at: datetime


@dataclass(frozen=True)
class Outcome:
    """How one try went: the answer's status (None: no answer), the first bytes of its body, or the
    error when nothing came back."""

    job: Job
    at: datetime
    latency_ms: int
    status: int | None = None
    head: bytes = b""
    error: str = ""

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def ended(self) -> datetime:
        """When the try ended: a retry's pause counts from here (after a timeout, 10 s after `at`)."""
        return self.at + timedelta(milliseconds=self.latency_ms)


@dataclass
class Recorded:
    """What a record changed, by webhook id: the metrics count it."""

    delivered: dict[int, int] = field(default_factory=dict)
    retried: dict[int, int] = field(default_factory=dict)
    failed: dict[int, int] = field(default_factory=dict)


def deliveries_claim(*, busy: Mapping[int, int], limit: int, now: datetime) -> list[Job]:
    """Claim the due deliveries of every webhook, at most `limit` less `busy[webhook]` each (its
    tries in flight in this process), oldest due first, of numbered events only, with what their
    tries need (one statement). Call it in a transaction; see the module docstring for the lease."""
    lease = now + timedelta(seconds=float(settings.WEBHOOK_LEASE_S))
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH busy(webhook_id, n) AS (SELECT * FROM unnest(%s::bigint[], %s::int[])), "
            f"slots AS (SELECT w.id, %s - coalesce(b.n, 0) AS free FROM {_WEBHOOK} w "
            "LEFT JOIN busy b ON b.webhook_id = w.id WHERE %s - coalesce(b.n, 0) > 0), "
            "picked AS (SELECT p.id FROM slots CROSS JOIN LATERAL ("
            f"SELECT d.id FROM {_DELIVERY} d WHERE d.webhook_id = slots.id AND d.status = %s "
            "AND d.next_attempt_at <= %s AND (d.claimed_until IS NULL OR d.claimed_until < %s) "
            f"AND EXISTS (SELECT 1 FROM {_EVENT} e WHERE e.id = d.event_id AND e.feed_id IS NOT NULL) "
            "ORDER BY d.next_attempt_at, d.id LIMIT slots.free FOR UPDATE OF d SKIP LOCKED) p) "
            f"UPDATE {_DELIVERY} d SET claimed_until = %s FROM picked p, {_EVENT} e, {_GAME} g, {_WEBHOOK} w "
            "WHERE d.id = p.id AND e.id = d.event_id AND g.id = e.game_id AND w.id = d.webhook_id "
            "RETURNING d.id, d.webhook_id, w.url, w.secret, e.feed_id, e.type, g.slug, e.created_at, e.data, "
            "d.attempts, d.deadline_at",
            [list(busy), list(busy.values()), limit, limit, DeliveryStatus.PENDING.value, now, now, lease],
        )
        claimed = sorted(cursor.fetchall())
    jobs = []
    for delivery_id, webhook_id, url, secret, feed_id, kind, slug, created_at, data, attempts, deadline in claimed:
        body = event_body(feed_id=feed_id, type=kind, game=slug, created_at=created_at, data=data)
        jobs.append(Job(delivery_id, webhook_id, url, secret, feed_id, body, attempts, deadline))
    return jobs


def dispatch_round(
    *, outcomes: Sequence[Outcome], busy: Mapping[int, int], limit: int, schedule: Schedule, now: datetime
) -> tuple[Recorded, list[Job]]:
    """The dispatcher's database work between two waits: record the tries that ended, then claim
    what is due, in one transaction committed without waiting for the disk (synchronous_commit off:
    a crash of PostgreSQL may lose its last records and claims, which only repeats tries; at least
    once holds). Numbering the events is not done here: it stays a synchronous commit."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF")
        recorded = deliveries_record(outcomes=outcomes, schedule=schedule, now=now)
        jobs = deliveries_claim(busy=busy, limit=limit, now=now)
    return recorded, jobs


def deliveries_record(*, outcomes: Sequence[Outcome], schedule: Schedule, now: datetime) -> Recorded:
    """Record tries and move their deliveries on (see the module docstring), in one transaction.
    A delivery no longer pending (recorded by another dispatcher after a lease ran out) or gone
    (its webhook deleted) keeps its state; the try is kept in its history when the delivery is."""
    recorded = Recorded()
    if not outcomes:
        return recorded
    states = [_next_state(o, schedule) for o in outcomes]
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_ATTEMPT} (delivery_id, at, status_code, latency_ms, response_head, error) "
            "SELECT a.* FROM unnest(%s::bigint[], %s::timestamptz[], %s::int[], %s::int[], %s::text[], %s::text[]) "
            f"AS a(delivery_id, at, status_code, latency_ms, head, error) "
            f"WHERE EXISTS (SELECT 1 FROM {_DELIVERY} d WHERE d.id = a.delivery_id)",
            [
                [o.job.delivery_id for o in outcomes],
                [o.at for o in outcomes],
                [o.status for o in outcomes],
                [o.latency_ms for o in outcomes],
                [o.head[:HEAD_BYTES].decode("utf-8", errors="replace") for o in outcomes],
                [o.error[:ERROR_CHARS] for o in outcomes],
            ],
        )
        cursor.execute(
            f"UPDATE {_DELIVERY} d SET status = s.status, attempts = d.attempts + 1, claimed_until = NULL, "
            "next_attempt_at = coalesce(s.next_at, d.next_attempt_at), delivered_at = s.delivered_at, "
            "last_status = s.last_status, last_error = s.last_error "
            "FROM unnest(%s::bigint[], %s::text[], %s::timestamptz[], %s::timestamptz[], %s::int[], %s::text[]) "
            "AS s(id, status, next_at, delivered_at, last_status, last_error) "
            "WHERE d.id = s.id AND d.status = %s RETURNING d.webhook_id, d.status",
            [*map(list, zip(*states, strict=True)), DeliveryStatus.PENDING.value],
        )
        changed = cursor.fetchall()
        back = sorted({o.job.webhook_id for o in outcomes if o.delivered})
        if back:  # the receiver answers again: its retries that got no answer are due now
            cursor.execute(
                f"UPDATE {_DELIVERY} SET next_attempt_at = %s WHERE webhook_id = ANY(%s) AND status = %s "
                "AND next_attempt_at > %s AND attempts > 0 AND last_status IS NULL",
                [now, back, DeliveryStatus.PENDING.value, now],
            )
    for webhook_id, status in changed:
        tally = {"delivered": recorded.delivered, "failed": recorded.failed}.get(status, recorded.retried)
        tally[webhook_id] = tally.get(webhook_id, 0) + 1
    return recorded


def _next_state(
    outcome: Outcome, schedule: Schedule
) -> tuple[int, str, datetime | None, datetime | None, int | None, str]:
    """A delivery's state after a try: (id, status, next try, delivered at, last status, last error)."""
    job = outcome.job
    error = outcome.error[:ERROR_CHARS] if outcome.status is None else f"HTTP {outcome.status}"
    if outcome.delivered:
        return (job.delivery_id, DeliveryStatus.DELIVERED.value, None, outcome.ended, outcome.status, "")
    next_at = schedule.next_try(failed_tries=job.attempts + 1, now=outcome.ended, deadline=job.deadline_at)
    status = DeliveryStatus.PENDING if next_at is not None else DeliveryStatus.FAILED
    return (job.delivery_id, status.value, next_at, None, outcome.status, error)
