"""Liveness and readiness probes."""

from django.db import connection
from django.db.models import Min
from django.http import JsonResponse
from django.utils import timezone

from scoring import redis_boards
from scoring.models import EventStatus, ScoreEvent


def live(request):
    return JsonResponse({"status": "ok"})


def ready(request):
    """200 with {database, redis, queue_lag_s} when the service can serve; 503 naming what failed.

    queue_lag_s is the age of the oldest accepted event not yet on the boards (0 when none).
    """
    body: dict[str, object] = {"database": "ok", "redis": "ok", "queue_lag_s": 0.0}
    healthy = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        oldest = ScoreEvent.objects.filter(status=EventStatus.ACCEPTED, applied_at__isnull=True).aggregate(
            oldest=Min("accepted_at")
        )["oldest"]
        if oldest is not None:
            body["queue_lag_s"] = round(max(0.0, (timezone.now() - oldest).total_seconds()), 3)
    except Exception as exc:
        healthy = False
        body["database"] = f"error: {exc.__class__.__name__}"
        body["queue_lag_s"] = None
    try:
        redis_boards.client().ping()
    except Exception as exc:
        healthy = False
        body["redis"] = f"error: {exc.__class__.__name__}"
    return JsonResponse(body, status=200 if healthy else 503)
