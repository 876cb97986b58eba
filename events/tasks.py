"""Beat task of events out: the prune (events older than EVENTS_KEEP_DAYS, with their deliveries)."""

import logging

from celery import shared_task
from django.utils import timezone

from .services import events_prune

logger = logging.getLogger(__name__)


@shared_task(name="events.prune", acks_late=True, ignore_result=True)
def prune() -> int:
    """Idempotent: what is gone stays gone; a run cut short leaves the rest to the next."""
    gone = events_prune(now=timezone.now())
    if gone:
        logger.info("events: %d older than the feed's window pruned", gone)
    return gone
