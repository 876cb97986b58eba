"""Celery tasks of the ledger. They take ids, are idempotent and have stable names."""

import logging
from datetime import timedelta

from celery import current_app, shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError
from redis import RedisError

from seasons.selectors import games_all

from .freezing import seasons_freeze_due
from .moderation import anomalies_review
from .outbox import events_apply_by_id, unapplied_select
from .reconcile import boards_reconcile as reconcile
from .recovery import boards_recover_if_lost

logger = logging.getLogger(__name__)

APPLY_QUEUE = "scoring"
RELAY_MAX_BACKLOG = 20


@shared_task(name="scoring.apply_events", acks_late=True, ignore_result=True)
def apply_events(event_ids: list[int]) -> dict[str, int]:
    """Apply accepted events to the boards. Paused games (rebuild) are left to the relay."""
    report = events_apply_by_id(
        event_ids=event_ids, dedup_ttl_s=settings.SCORING_DEDUP_TTL_S, chunk=settings.SCORING_APPLY_CHUNK
    )
    return report.counts()


def queue_backlog() -> int | None:
    """Tasks waiting in the apply queue, asked of the broker itself (whatever CELERY_BROKER_URL
    names); None when the broker cannot be reached."""
    with current_app.connection_for_read() as conn:
        channel_errors: tuple[type[BaseException], ...] = tuple(conn.channel_errors)
        connection_errors: tuple[type[BaseException], ...] = (OperationalError, *conn.connection_errors)
        try:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0)  # fail fast
            # Every transport's channel declares queues; the stubs' base channel type does not say so.
            declared = conn.default_channel.queue_declare(queue=APPLY_QUEUE, passive=True)  # type: ignore[attr-defined]
            return int(declared.message_count)
        except channel_errors:
            return 0  # no such queue yet: nothing waits in it (on Redis an empty queue does not exist)
        except connection_errors as exc:
            logger.warning("relay: the broker is unavailable (%s)", exc)
            return None


@shared_task(name="scoring.relay_unapplied", acks_late=True, ignore_result=True)
def relay_unapplied() -> int:
    """The outbox sweep: re-enqueue accepted events still unapplied after SCORING_RELAY_AFTER_S.

    Each event is re-sent at most every 30 s, and not at all while the queue holds a backlog
    (those events are on their way), so a slow worker is not buried under duplicates.
    """
    from .services import enqueue_apply

    backlog = queue_backlog()
    if backlog is None or backlog > RELAY_MAX_BACKLOG:
        return 0  # the broker is down (nothing can be enqueued), or the queue is busy
    now = timezone.now()
    with transaction.atomic():
        ids = unapplied_select(
            older_than=now - timedelta(seconds=settings.SCORING_RELAY_AFTER_S),
            stale_enqueue_before=now - timedelta(seconds=30),
            limit=settings.SCORING_RELAY_BATCH,
        )
    if ids:
        logger.info("relay: re-enqueued %d unapplied events", len(ids))
        enqueue_apply(ids)
    return len(ids)


@shared_task(name="scoring.anomalies", acks_late=True, ignore_result=True)
def anomalies() -> dict[str, int]:
    """Every minute: per game, results far above the cohort go to review (moderation.py)."""
    withheld = released = 0
    now = timezone.now()
    for game in games_all():
        w, r = anomalies_review(game=game, now=now)
        withheld, released = withheld + w, released + r
    return {"withheld": withheld, "released": released}


@shared_task(name="scoring.seasons_freeze", acks_late=True, ignore_result=True)
def seasons_freeze() -> int:
    """Every 15 s: freeze the seasons whose grace has ended (their final standings)."""
    frozen = seasons_freeze_due(now=timezone.now())
    if frozen:
        logger.info("seasons frozen: %s", frozen)
    return len(frozen)


@shared_task(name="scoring.boards_recover", acks_late=True, ignore_result=True)
def boards_recover() -> int:
    """Every few seconds: when the boards marker is missing (Redis lost its data), rebuild every
    game's live boards from the ledger (recovery.py). Returns the number of games rebuilt."""
    try:
        report = boards_recover_if_lost()
    except RedisError as exc:  # Redis is down (not empty): the next check asks again
        logger.info("boards check: Redis unavailable (%s)", exc.__class__.__name__)
        return 0
    return len(report.games) if report is not None else 0


@shared_task(name="scoring.boards_reconcile", acks_late=True, ignore_result=True)
def boards_reconcile() -> int:
    """On a schedule: each game's boards compared with the ledger on a sample of players, drift
    repaired (reconcile.py). Returns the drifted entries found."""
    drift = 0
    for game in games_all():
        try:
            drift += reconcile(game=game, sample=settings.RECONCILE_SAMPLE).drift
        except Exception:  # one game's failure does not spare the others their check
            logger.exception("reconcile %s failed", game.slug)
    return drift
