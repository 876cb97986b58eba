"""Beat task of the season lifecycle: start scheduled seasons, move the season pointer, and keep
the read path's catalog in Redis equal to the tables.

Freezing a season's boards (after its grace) and archiving them are jobs of the apps that own
the ledger and the boards (`scoring.seasons_freeze`, `boards.seasons_archive`)."""

import logging

from celery import shared_task
from django.utils import timezone

from .catalog import catalogs_refresh
from .services import pointers_advance, seasons_schedule_next

logger = logging.getLogger(__name__)


@shared_task(name="seasons.rotate", acks_late=True, ignore_result=True)
def rotate() -> dict[str, int]:
    """Idempotent: a season is started once (its start follows the last one's end)."""
    now = timezone.now()
    created = len(seasons_schedule_next(now=now))
    moved = pointers_advance(now=now)
    republished = catalogs_refresh()
    if created or moved or republished:
        logger.info("seasons: %d started, %d pointers moved, %d catalogs re-published", created, moved, republished)
    return {"started": created, "pointers_moved": moved, "catalogs_republished": republished}
