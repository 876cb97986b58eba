"""The outbox relay asks the broker itself (CELERY_BROKER_URL, not REDIS_URL) how much waits in
the apply queue, and holds back while the queue is busy or the broker is down."""

import json
from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone

from common.redis import broker_key
from common.redis import client as redis_client
from scoring.models import ScoreEvent
from scoring.services import APPLY_TASK, enqueue_apply
from scoring.tasks import APPLY_QUEUE, RELAY_MAX_BACKLOG, apply_events, queue_backlog, relay_unapplied
from scoring.testing import make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker_url():
    saved = current_app.conf.broker_url
    yield
    current_app.conf.broker_url = saved


def test_the_backlog_is_the_brokers_queue_length_and_none_when_it_is_down(broker_url):
    assert queue_backlog() == 0  # an empty queue (on Redis: no key at all)
    redis_client().rpush(broker_key(APPLY_QUEUE), "task-1", "task-2")
    assert queue_backlog() == 2
    current_app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens there
    assert queue_backlog() is None


def test_the_relay_re_enqueues_stale_unapplied_results_unless_the_queue_is_busy(settings):
    settings.SCORING_RELAY_AFTER_S = 0
    game = make_game()
    submit_direct(game, make_key(game), match_body([{"player_id": "a", "points": 1}]), now=timezone.now())
    ScoreEvent.objects.update(accepted_at=timezone.now() - timedelta(seconds=10))
    redis_client().delete(broker_key(APPLY_QUEUE))  # the on-commit enqueue never ran in this test's transaction
    redis_client().rpush(broker_key(APPLY_QUEUE), *[f"busy-{i}" for i in range(RELAY_MAX_BACKLOG + 1)])
    assert relay_unapplied() == 0  # a backlog: those events are on their way
    redis_client().delete(broker_key(APPLY_QUEUE))
    assert relay_unapplied() == 1
    assert redis_client().llen(broker_key(APPLY_QUEUE)) == 1  # one apply task, on the broker the worker reads
    assert relay_unapplied() == 0  # re-sent at most every 30 s


def test_enqueue_apply_sends_the_message_apply_async_sends():
    """`enqueue_apply` sends the apply task by its stable name (services does not import the tasks
    module: moderation -> services -> tasks -> moderation was a circle); the message on the broker
    is the one `apply_events.apply_async` sends, on the same queue, ids apart."""
    assert apply_events.name == APPLY_TASK
    queue = broker_key(APPLY_QUEUE)
    redis_client().delete(queue)
    enqueue_apply([1, 2, 3])
    apply_events.apply_async(args=([1, 2, 3],), retry=False)
    messages = [json.loads(raw) for raw in redis_client().lrange(queue, 0, -1)]
    assert len(messages) == 2

    def without_ids(message: dict) -> dict:
        headers = {k: v for k, v in message["headers"].items() if k not in ("id", "root_id")}
        properties = {k: v for k, v in message["properties"].items() if k not in ("correlation_id", "delivery_tag")}
        return {**message, "headers": headers, "properties": properties}

    first, second = (without_ids(m) for m in messages)
    assert first == second
    assert first["headers"]["task"] == "scoring.apply_events"
    assert first["headers"]["ignore_result"] is True
    assert first["properties"]["delivery_info"] == {"exchange": "", "routing_key": APPLY_QUEUE}
