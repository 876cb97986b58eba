"""`/metrics`: the Prometheus text format, produced by prometheus-client.

Two sources:
- what this host's processes counted themselves (web requests, results, apply lag, WebSockets),
  from the multiprocess folder (common/observability.py);
- what is shared by every process and host, read at scrape time (`SharedCollector`): the refusal,
  reconciliation and recovery counters kept in Redis (common/metrics.py), the apply queue's depth
  on the broker, the ledger's accepted events not yet on the boards and the age of the oldest, and
  each webhook's pending deliveries and the age of its oldest (events/metrics.py).

No label holds a player or match id, a name or a path. Protected in production (settings
METRICS_PROTECTED): `Authorization: Bearer <METRICS_TOKEN>`, compared in constant time; without a
token configured, 403 for everyone.
"""

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from common.metrics import counters_read
from common.observability import CONTENT_TYPE, Collector, CounterMetricFamily, GaugeMetricFamily, metrics_exposition
from events.metrics import webhook_backlog_metrics
from scoring.ledger_partitions import months_ahead
from scoring.outbox import unapplied_count
from scoring.selectors import queue_lag_s
from scoring.tasks import queue_backlog

# Counters kept in Redis: field prefix -> (metric, type, help); the part after the prefix is the game.
_PER_GAME = {
    "reconcile_drift": (
        "leaderboard_reconcile_drift",
        "counter",
        "Board entries found different from the ledger by reconcile_boards, and repaired.",
    ),
    "reconcile_unreflected": (
        "leaderboard_reconcile_unreflected_events",
        "counter",
        "Results marked applied in the ledger but absent from Redis (no dedup marker, or another event's), "
        "found by the reconciliation and put back on their boards.",
    ),
    "reconcile_last_drift": ("leaderboard_reconcile_last_drift", "gauge", "Drifted entries found by the last run."),
    "reconcile_last_run": (
        "leaderboard_reconcile_last_run_timestamp_seconds",
        "gauge",
        "Unix time of the last reconciliation run.",
    ),
}


class SharedCollector(Collector):
    """Values every process shares, read when Prometheus scrapes (see the module docstring). A
    store that cannot answer leaves its metrics out of this scrape rather than failing it."""

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        found = counters_read()
        if found is not None:
            yield from self._redis_counters(found)
        yield from self._queues()

    def _redis_counters(self, found: dict[str, int]) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        refused = CounterMetricFamily(
            "leaderboard_refused", "Matches refused outside any open season, by code and game.", labels=["code", "game"]
        )
        for field, value in sorted(found.items()):
            kind, code, game = [*field.split(":"), "", ""][:3]
            if kind == "refused":
                refused.add_metric([code, game], value)
        yield refused
        for prefix, (name, kind, text) in _PER_GAME.items():
            family = (CounterMetricFamily if kind == "counter" else GaugeMetricFamily)(name, text, labels=["game"])
            for field, value in sorted(found.items()):
                field_prefix, _, game = field.partition(":")
                if field_prefix == prefix:
                    family.add_metric([game], value)
            yield family
        yield CounterMetricFamily(
            "leaderboard_boards_recoveries",
            "Times Redis was found empty and every live board rebuilt.",
            value=found.get("boards_recoveries", 0),
        )
        yield CounterMetricFamily(
            "leaderboard_redis_failovers",
            "Times another Redis server was found answering (a replica promoted, or a restart) and the "
            "boards compared with the ledger in full.",
            value=found.get("redis_failovers", 0),
        )
        yield GaugeMetricFamily(
            "leaderboard_boards_recovery_seconds",
            "How long the last such rebuild took.",
            value=found.get("boards_recovery_ms", 0) / 1000,
        )

    def _queues(self) -> Iterator[GaugeMetricFamily]:
        backlog = queue_backlog()
        if backlog is not None:
            yield GaugeMetricFamily(
                "leaderboard_apply_queue_tasks", "Apply tasks waiting in the broker's scoring queue.", value=backlog
            )
        try:
            unapplied = unapplied_count()
            lag = queue_lag_s(now=timezone.now())
            webhooks = list(webhook_backlog_metrics())
            ahead = months_ahead(now=timezone.now())
        except Exception:  # the ledger is down: /health/ready says so
            return
        yield from webhooks
        yield GaugeMetricFamily(
            "leaderboard_events_unapplied",
            "Accepted results not yet on the boards (the outbox), counted up to a million.",
            value=unapplied,
        )
        yield GaugeMetricFamily(
            "leaderboard_ledger_months_ahead",
            "Whole months past the current one whose ledger partitions exist (below 1: the hourly job is not running).",
            value=ahead,
        )
        yield GaugeMetricFamily(
            "leaderboard_queue_lag_seconds",
            "Age of the oldest accepted result not yet on the boards (0 when none).",
            value=lag,
        )


def _allowed(request: HttpRequest) -> int | None:
    """None when the request may read the metrics, else the status to answer."""
    token = str(settings.METRICS_TOKEN)
    if not token:
        return 403 if settings.METRICS_PROTECTED else None
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return None
    return 401


def metrics(request: HttpRequest) -> HttpResponse:
    refused = _allowed(request)
    if refused == 403:
        return HttpResponse("Metrics are closed: METRICS_TOKEN is not set.\n", status=403, content_type="text/plain")
    if refused == 401:
        response = HttpResponse("A bearer token is required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(metrics_exposition([SharedCollector()]), content_type=CONTENT_TYPE)
