"""Beat tasks of the season lifecycle: freeze after grace, archive after the keys' TTL, schedule."""

import logging

from celery import shared_task
from django.utils import timezone

from .freezing import season_archive, season_freeze, seasons_due
from .services import pointers_advance, seasons_schedule_next

logger = logging.getLogger(__name__)


@shared_task(name="seasons.rotate", acks_late=True, ignore_result=True)
def rotate() -> dict[str, int]:
    """Idempotent: freezing and archiving check their own state under a row lock."""
    now = timezone.now()
    to_freeze, to_archive = seasons_due(now=now)
    frozen = sum(1 for season_id in to_freeze if season_freeze(season_id=season_id, now=now) >= 0)
    archived = sum(1 for season_id in to_archive if season_archive(season_id=season_id, now=now))
    created = len(seasons_schedule_next(now=now))
    pointers_advance(now=now)
    if frozen or archived or created:
        logger.info("seasons: %d frozen, %d archived, %d started", frozen, archived, created)
    return {"frozen": frozen, "archived": archived, "started": created}
