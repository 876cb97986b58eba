"""Beat tasks of the boards: live pushes, archiving frozen seasons' keys."""

import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from seasons.selectors import seasons_to_archive

from .events import publish_live
from .standings import season_archive

logger = logging.getLogger(__name__)


@shared_task(name="boards.publish_live", ignore_result=True, expires=5)
def publish_live_task() -> int:
    return publish_live()


@shared_task(name="boards.seasons_archive", acks_late=True, ignore_result=True)
def seasons_archive() -> int:
    """Every minute: drop the Redis keys of seasons frozen longer than their keys' TTL."""
    now = timezone.now()
    due = seasons_to_archive(now=now, keys_ttl_s=int(settings.SEASON_KEYS_TTL_AFTER_FREEZE_S))
    archived = sum(1 for season in due if season_archive(season=season, now=now))
    if archived:
        logger.info("seasons archived: %d", archived)
    return archived
