"""Liveness and readiness probes, and the Prometheus text exposition."""

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from common.metrics import counters
from common.redis import client
from scoring.selectors import queue_lag_s


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text format: the refusal counters and the queue lag (the service's own view)."""
    lines = ["# TYPE leaderboard_refused_total counter"]
    found = counters()
    for field, value in sorted(found.items()):
        kind, code, game = [*field.split(":"), "", ""][:3]
        if kind == "refused":
            lines.append(f'leaderboard_refused_total{{code="{code}",game="{game}"}} {value}')
    lines += _boards_lines(found)
    lag = queue_lag_s(now=timezone.now())
    lines += ["# TYPE leaderboard_queue_lag_seconds gauge", f"leaderboard_queue_lag_seconds {lag:.3f}"]
    return HttpResponse("\n".join(lines) + "\n", content_type="text/plain; version=0.0.4")


# Reconciliation and recovery (scoring/reconcile.py, scoring/recovery.py): counter field prefix ->
# (metric, type, help); the part after the prefix is the game.
_RECONCILE = {
    "reconcile_drift": (
        "leaderboard_reconcile_drift_total",
        "counter",
        "Board entries found different from the ledger by reconcile_boards, and repaired.",
    ),
    "reconcile_last_drift": ("leaderboard_reconcile_last_drift", "gauge", "Drifted entries found by the last run."),
    "reconcile_last_run": (
        "leaderboard_reconcile_last_run_timestamp_seconds",
        "gauge",
        "Unix time of the last reconciliation run.",
    ),
}


def _boards_lines(found: dict[str, int]) -> list[str]:
    lines = []
    for prefix, (name, kind, text) in _RECONCILE.items():
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for field, value in sorted(found.items()):
            field_prefix, _, game = field.partition(":")
            if field_prefix == prefix:
                lines.append(f'{name}{{game="{game}"}} {value}')
    lines += [
        "# HELP leaderboard_boards_recoveries_total Times Redis was found empty and every live board rebuilt.",
        "# TYPE leaderboard_boards_recoveries_total counter",
        f"leaderboard_boards_recoveries_total {found.get('boards_recoveries', 0)}",
        "# HELP leaderboard_boards_recovery_seconds How long the last such rebuild took.",
        "# TYPE leaderboard_boards_recovery_seconds gauge",
        f"leaderboard_boards_recovery_seconds {found.get('boards_recovery_ms', 0) / 1000:.3f}",
    ]
    return lines


def live(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def ready(request: HttpRequest) -> JsonResponse:
    """200 with {database, redis, queue_lag_s} when the service can serve; 503 naming what failed.

    queue_lag_s is the age of the oldest accepted event not yet on the boards (0 when none).
    """
    body: dict[str, object] = {"database": "ok", "redis": "ok", "queue_lag_s": 0.0}
    healthy = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        body["queue_lag_s"] = round(queue_lag_s(now=timezone.now()), 3)
    except Exception as exc:
        healthy = False
        body["database"] = f"error: {exc.__class__.__name__}"
        body["queue_lag_s"] = None
    try:
        client().ping()
    except Exception as exc:
        healthy = False
        body["redis"] = f"error: {exc.__class__.__name__}"
    return JsonResponse(body, status=200 if healthy else 503)
