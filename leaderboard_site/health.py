"""Liveness and readiness probes."""

from django.db import connection
from django.db.models import Min
from django.http import HttpResponse, JsonResponse
from django.utils import timezone

from scoring import redis_boards
from scoring.models import EventStatus, ScoreEvent


def metrics(request):
    """Prometheus text format: the refusal counters and the queue lag (the service's own view)."""
    lines = ["# TYPE leaderboard_refused_total counter"]
    try:
        counters = redis_boards.client().hgetall(redis_boards.metrics_key())
    except Exception:
        counters = {}
    for field, value in sorted(counters.items()):
        kind, code, game = [*str(field).split(":"), "", ""][:3]
        if kind == "refused":
            lines.append(f'leaderboard_refused_total{{code="{code}",game="{game}"}} {int(value)}')
    oldest = ScoreEvent.objects.filter(status=EventStatus.ACCEPTED, applied_at__isnull=True).aggregate(
        oldest=Min("accepted_at")
    )["oldest"]
    lag = max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0
    lines += ["# TYPE leaderboard_queue_lag_seconds gauge", f"leaderboard_queue_lag_seconds {lag:.3f}"]
    return HttpResponse("\n".join(lines) + "\n", content_type="text/plain; version=0.0.4")


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
