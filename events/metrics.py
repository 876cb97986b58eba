"""Per-webhook delivery metrics (`/metrics`): what the dispatcher counted, and the backlog.

- `leaderboard_webhook_delivered_total{webhook}`: deliveries answered with a 2xx;
- `leaderboard_webhook_retried_total{webhook}`: failed tries after which another is scheduled;
- `leaderboard_webhook_failed_total{webhook}`: deliveries given up after WEBHOOK_RETRY_FOR_S;
- `leaderboard_webhook_pending{webhook}` and `leaderboard_webhook_oldest_undelivered_seconds{webhook}`:
  read from the database at scrape time (`webhook_backlog_metrics`, leaderboard_site/metrics.py), so
  every dispatcher and host agrees.

The counters are the dispatcher process's own (common/observability.py: multiprocess files), the
label the webhook's id: never its URL.
"""

from collections.abc import Iterator

from django.utils import timezone

from common.observability import Counter, GaugeMetricFamily

from .delivery import Recorded
from .selectors import webhook_backlogs

DELIVERED = Counter("leaderboard_webhook_delivered", "Webhook deliveries answered with a 2xx.", ["webhook"])
RETRIED = Counter(
    "leaderboard_webhook_retried", "Failed webhook tries after which another try is scheduled.", ["webhook"]
)
FAILED = Counter("leaderboard_webhook_failed", "Webhook deliveries given up (no 2xx within their window).", ["webhook"])


def recorded_count(recorded: Recorded) -> None:
    tallies = ((DELIVERED, recorded.delivered), (RETRIED, recorded.retried), (FAILED, recorded.failed))
    for counter, by_webhook in tallies:
        for webhook_id, n in by_webhook.items():
            counter.labels(str(webhook_id)).inc(n)


def webhook_backlog_metrics() -> Iterator[GaugeMetricFamily]:
    """The pending deliveries of each webhook and the age of its oldest (0 for none pending)."""
    backlogs = webhook_backlogs(now=timezone.now())
    pending = GaugeMetricFamily(
        "leaderboard_webhook_pending", "Webhook deliveries not delivered yet (pending).", labels=["webhook"]
    )
    oldest = GaugeMetricFamily(
        "leaderboard_webhook_oldest_undelivered_seconds",
        "Age of the oldest event a webhook has not received yet (since it was published).",
        labels=["webhook"],
    )
    for backlog in backlogs:
        pending.add_metric([str(backlog.webhook_id)], backlog.pending)
        oldest.add_metric([str(backlog.webhook_id)], backlog.oldest_age_s)
    yield pending
    yield oldest
