"""Celery tasks of the write path. They take ids, are idempotent and have stable names."""

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from . import redis_boards
from .board_writer import events_apply_by_id, unapplied_select

logger = logging.getLogger(__name__)


@shared_task(name="scoring.apply_events", acks_late=True, ignore_result=True)
def apply_events(event_ids: list[int]) -> dict[str, int]:
    """Apply accepted events to the boards. Paused games (rebuild) are left to the relay."""
    report = events_apply_by_id(
        event_ids=event_ids, dedup_ttl_s=settings.SCORING_DEDUP_TTL_S, chunk=settings.SCORING_APPLY_CHUNK
    )
    return report.__dict__


@shared_task(name="scoring.relay_unapplied", acks_late=True, ignore_result=True)
def relay_unapplied() -> int:
    """The outbox sweep: re-enqueue accepted events still unapplied after SCORING_RELAY_AFTER_S.

    Each event is re-sent at most every 30 s, and not at all while the queue holds a backlog
    (those events are on their way), so a slow worker is not buried under duplicates.
    """
    from .services import enqueue_apply

    try:
        backlog = redis_boards.client().llen("scoring")
    except Exception:  # the broker is down: nothing can be enqueued anyway
        return 0
    if backlog > 20:
        return 0
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
