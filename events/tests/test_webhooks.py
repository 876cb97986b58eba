"""Webhook deliveries against real receivers (HTTP servers on loopback) with the dispatcher running
in this process: signed POSTs, every try recorded, retries by the schedule, failures and
redeliveries, no redirect followed, an answer's body read no further than its first 1 KB, a dead
receiver holding up neither another webhook nor another event. The schedule is shortened through
its settings here; test_schedule.py holds the shipped one's arithmetic, test_faults.py runs it."""

import json
import time

import pytest
from django.test import override_settings
from django.utils import timezone

from events.delivery import HEAD_BYTES
from events.models import Delivery, DeliveryAttempt, DeliveryStatus
from events.services import deliveries_redeliver, events_publish, webhook_create
from events.testing import HANG, Receiver, dispatcher_running, signature_valid
from events.types import PLAYER_BANNED, RESULT_REVIEWED
from seasons.testing import make_game

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

FAST = {
    "WEBHOOK_RETRY_BASE_S": 0.1,
    "WEBHOOK_RETRY_MAX_S": 0.4,
    "WEBHOOK_TIMEOUT_S": 1.0,
    "WEBHOOK_LEASE_S": 3.0,
    "EVENTS_DISPATCH_POLL_S": 0.05,
}


def publish(game, n: int, type: str = PLAYER_BANNED) -> None:
    for i in range(n):
        events_publish(game=game, type=type, data={"player_id": f"p{i}", "revoked": i})


def every_one_arrived(receiver: Receiver, n: int) -> bool:
    return sorted(set(receiver.event_ids())) == list(range(1, n + 1))


@override_settings(**FAST)
def test_each_event_is_posted_signed_with_its_body_and_every_try_is_recorded():
    game = make_game("arena")
    with Receiver() as receiver:
        hook = webhook_create(game=game, url=receiver.url)
        publish(game, 5)
        with dispatcher_running():
            receiver.wait_for(lambda r: every_one_arrived(r, 5), timeout=10)
    assert sorted(receiver.event_ids()) == [1, 2, 3, 4, 5]  # each once: every answer was a 200
    for request in receiver.received:
        assert signature_valid(secret=hook.secret, request=request)
        assert request.path == "/hooks/leaderboard?source=test"
        body = json.loads(request.body)
        assert list(body) == ["id", "type", "game", "created_at", "data"]
        assert body["id"] == request.event_id and body["type"] == PLAYER_BANNED and body["game"] == "arena"
        assert body["data"] == {"player_id": f"p{body['id'] - 1}", "revoked": body["id"] - 1}
        assert request.headers["Content-Type"] == "application/json"
    assert set(Delivery.objects.values_list("status", flat=True)) == {DeliveryStatus.DELIVERED}
    tries = list(DeliveryAttempt.objects.all())
    assert len(tries) == 5 and {t.status_code for t in tries} == {200}
    assert all(t.response_head == "ok" and t.latency_ms < 1000 and t.error == "" for t in tries)


@override_settings(**FAST)
def test_a_webhook_gets_only_its_types_and_only_what_is_published_after_it():
    game = make_game("arena")
    publish(game, 1)  # before any webhook: nobody gets it
    with Receiver() as banned, Receiver() as everything:
        webhook_create(game=game, url=banned.url, types=[PLAYER_BANNED])
        webhook_create(game=game, url=everything.url)
        publish(game, 1)
        publish(game, 1, type=RESULT_REVIEWED)
        with dispatcher_running():
            everything.wait_for(lambda r: sorted(r.event_ids()) == [2, 3], timeout=10)
            banned.wait_for(lambda r: r.event_ids() == [2], timeout=10)
            time.sleep(0.3)
    assert banned.event_ids() == [2]


@override_settings(**FAST)
def test_a_receiver_answering_500_to_its_first_3_tries_gets_every_event():
    game = make_game("arena")
    with Receiver(lambda n, request: 500 if n < 3 else 200) as receiver:
        hook = webhook_create(game=game, url=receiver.url)
        publish(game, 3)
        with dispatcher_running():
            took = receiver.wait_for(lambda r: every_one_arrived(r, 3), timeout=20)
    print(f"\n500 to the first 3 tries: all 3 events delivered {took:.2f} s after the dispatcher started")
    assert all(signature_valid(secret=hook.secret, request=r) for r in receiver.received)
    assert len(receiver.received) == 6  # 3 refused, then each event once
    statuses = list(DeliveryAttempt.objects.order_by("at").values_list("status_code", flat=True))
    assert sorted(statuses) == [200, 200, 200, 500, 500, 500]
    assert Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 3


@override_settings(**FAST, WEBHOOK_RETRY_FOR_S=1.0)
def test_a_delivery_fails_after_its_window_and_a_redelivery_sends_it_again():
    game = make_game("arena")
    refusing = True
    with Receiver(lambda n, request: 500 if refusing else 204) as receiver:
        webhook_create(game=game, url=receiver.url)
        publish(game, 1)
        with dispatcher_running():
            receiver.wait_for(lambda r: Delivery.objects.filter(status=DeliveryStatus.FAILED).exists(), timeout=10)
            tries = len(receiver.received)
            delivery = Delivery.objects.get()
            assert delivery.last_status == 500 and delivery.last_error == "HTTP 500"
            assert 3 <= tries == delivery.attempts == DeliveryAttempt.objects.count()
            time.sleep(0.5)
            assert len(receiver.received) == tries  # failed: no more tries
            refusing = False
            assert deliveries_redeliver(delivery_ids=[delivery.pk], now=timezone.now()) == 1
            receiver.wait_for(lambda r: r.event_ids(status=204) == [1], timeout=10)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED and delivery.attempts == 1
    assert deliveries_redeliver(delivery_ids=[delivery.pk], now=timezone.now()) == 0  # only failed ones


@override_settings(**FAST)
def test_redirects_are_never_followed():
    game = make_game("arena")
    with Receiver() as elsewhere:
        with Receiver(lambda n, request: 302) as receiver:
            receiver.body = b""
            webhook_create(game=game, url=receiver.url)
            publish(game, 1)
            with dispatcher_running():
                receiver.wait_for(lambda r: len(r.received) >= 2, timeout=10)
    assert elsewhere.received == []
    assert set(DeliveryAttempt.objects.values_list("status_code", flat=True)) == {302}
    assert Delivery.objects.get().status == DeliveryStatus.PENDING


@override_settings(**FAST)
def test_an_answers_body_is_read_no_further_than_its_first_kilobyte():
    game = make_game("arena")
    with Receiver(body=b"x" * 5_000_000) as receiver:
        webhook_create(game=game, url=receiver.url)
        publish(game, 1)
        with dispatcher_running():
            receiver.wait_for(lambda r: Delivery.objects.filter(status=DeliveryStatus.DELIVERED).exists(), timeout=10)
    attempt = DeliveryAttempt.objects.get()
    assert attempt.status_code == 200 and attempt.response_head == "x" * HEAD_BYTES


@override_settings(**FAST, WEBHOOK_CONCURRENCY=2)
def test_a_hanging_receiver_holds_up_neither_another_webhook_nor_its_own_later_events():
    game = make_game("arena")
    # The first two tries hang past the timeout (1 s here); every other request is answered at once.
    with Receiver(lambda n, request: HANG if n < 2 else 200, hang_s=5) as stuck, Receiver() as healthy:
        webhook_create(game=game, url=stuck.url)
        webhook_create(game=game, url=healthy.url)
        publish(game, 2)
        with dispatcher_running():
            stuck.wait_for(lambda r: len(r.received) == 2, timeout=10)  # both places of the webhook held
            publish(game, 3)
            healthy_took = healthy.wait_for(lambda r: every_one_arrived(r, 5), timeout=10)
            stuck_took = stuck.wait_for(lambda r: every_one_arrived(r, 5), timeout=20)
    print(
        f"\nhanging receiver: the other webhook had all 5 events {healthy_took:.2f} s after publishing, "
        f"the hanging one {stuck_took:.2f} s after (timeout 1 s)"
    )
    assert healthy_took < 1.0  # not behind the held tries
    timeouts = DeliveryAttempt.objects.filter(delivery__webhook__url=stuck.url, status_code=None)
    assert timeouts.count() == 2 and all("no answer within 1 s" in t.error for t in timeouts)
    assert all(900 <= t.latency_ms < 2000 for t in timeouts)
