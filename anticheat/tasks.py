"""Beat tasks of anti-cheat."""

from celery import shared_task
from django.utils import timezone

from seasons.models import Game

from .moderation import anomalies_review


@shared_task(name="anticheat.anomalies", acks_late=True, ignore_result=True)
def anomalies() -> dict[str, int]:
    """Every minute: per game, results above the cohort's p99.99 go to review (see moderation)."""
    withheld = released = 0
    now = timezone.now()
    for game in Game.objects.all():
        w, r = anomalies_review(game=game, now=now)
        withheld, released = withheld + w, released + r
    return {"withheld": withheld, "released": released}
