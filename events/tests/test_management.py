"""Webhooks from the shell and from the admin: create_webhook and delete_webhook (JSON on stdout),
the admin's add (the secret shown once), its lists of deliveries with their tries, and its actions
that send failed deliveries again, one, a selection, or every one of a webhook."""

import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.utils import timezone

from events.models import Delivery, DeliveryAttempt, DeliveryStatus, Webhook
from events.services import events_publish, webhook_create
from events.types import PLAYER_BANNED
from seasons.testing import make_game

pytestmark = pytest.mark.django_db


def command(*args: str) -> dict:
    out = io.StringIO()
    call_command(*args, stdout=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1  # one JSON object, nothing else
    return json.loads(lines[0])


def test_create_webhook_prints_its_id_and_secret_once():
    make_game("arena")
    made = command("create_webhook", "arena", "https://studio.example/hooks/lb?env=prod", "--types", "player.banned")
    assert list(made) == ["webhook_id", "secret"] and len(made["secret"]) >= 40
    hook = Webhook.objects.get(pk=made["webhook_id"])
    assert (hook.url, hook.types, hook.secret) == (
        "https://studio.example/hooks/lb?env=prod",
        ["player.banned"],
        made["secret"],
    )
    assert (
        Webhook.objects.get(pk=command("create_webhook", "arena", "http://127.0.0.1:9000/")["webhook_id"]).types == []
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nope", "https://x.example/"], "unknown game"),
        (["arena", "ftp://x.example/"], "not an absolute http"),
        (["arena", "/relative"], "not an absolute http"),
        (["arena", "https://x.example/", "--types", "season.ended"], "not an event type"),
        (["arena", "https://x.example/", "--types", "player.banned,"], "not an event type"),
    ],
)
def test_create_webhook_refuses_what_it_cannot_deliver(args, says):
    make_game("arena")
    with pytest.raises(CommandError, match=says):
        call_command("create_webhook", *args, stdout=io.StringIO())
    assert not Webhook.objects.exists()


def test_delete_webhook_takes_its_deliveries_and_tries_with_it():
    game = make_game("arena")
    hook = webhook_create(game=game, url="http://127.0.0.1:9/hook")
    kept = webhook_create(game=game, url="http://127.0.0.1:9/other")
    events_publish(game=game, type=PLAYER_BANNED, data={"player_id": "a", "revoked": 0})
    delivery = Delivery.objects.get(webhook=hook)
    DeliveryAttempt.objects.create(delivery=delivery, at=timezone.now(), latency_ms=1, status_code=500)
    assert command("delete_webhook", str(hook.pk)) == {"webhook_id": hook.pk, "deleted": True}
    assert list(Delivery.objects.values_list("webhook_id", flat=True)) == [kept.pk]
    assert not DeliveryAttempt.objects.exists()
    with pytest.raises(CommandError, match="no webhook"):
        call_command("delete_webhook", str(hook.pk), stdout=io.StringIO())


@pytest.fixture
def admin_client(client):
    user = User.objects.create_superuser("root", password="pw")
    client.force_login(user)
    return client


def test_the_admin_adds_a_webhook_and_shows_its_secret_once(admin_client):
    game = make_game("arena")
    response = admin_client.post(
        "/admin/events/webhook/add/",
        {"game": game.pk, "url": "https://studio.example/hook", "types": ["player.banned", "season.frozen"]},
        follow=True,
    )
    hook = Webhook.objects.get()
    assert hook.types == ["player.banned", "season.frozen"]
    assert hook.secret in response.content.decode()
    page = admin_client.get(f"/admin/events/webhook/{hook.pk}/change/").content.decode()
    assert hook.secret not in page


def failed_deliveries(game, hook, n: int) -> list[Delivery]:
    for i in range(n):
        events_publish(game=game, type=PLAYER_BANNED, data={"player_id": f"p{i}", "revoked": 0})
    Delivery.objects.update(status=DeliveryStatus.FAILED, attempts=153, last_error="HTTP 503", last_status=503)
    for delivery in Delivery.objects.all():
        DeliveryAttempt.objects.create(
            delivery=delivery, at=timezone.now(), latency_ms=7, status_code=503, response_head="down"
        )
    return list(Delivery.objects.order_by("id"))


def test_the_admin_lists_deliveries_with_their_tries_and_sends_failed_ones_again(admin_client):
    game = make_game("arena")
    hook = webhook_create(game=game, url="http://127.0.0.1:9/hook")
    first, second, third = failed_deliveries(game, hook, 3)
    listing = admin_client.get("/admin/events/delivery/?status=failed").content.decode()
    assert listing.count("HTTP 503") == 3
    page = admin_client.get(f"/admin/events/delivery/{first.pk}/change/").content.decode()
    assert "down" in page and "503" in page  # its tries: status and the start of the answer
    # One by one, then a selection (one of which is not failed: left alone).
    admin_client.post("/admin/events/delivery/", {"action": "redeliver", "_selected_action": [first.pk]})
    first.refresh_from_db()
    assert (first.status, first.attempts, first.last_error) == (DeliveryStatus.PENDING, 0, "")
    assert first.next_attempt_at <= timezone.now() and first.deadline_at > timezone.now()
    admin_client.post("/admin/events/delivery/", {"action": "redeliver", "_selected_action": [first.pk, second.pk]})
    assert Delivery.objects.filter(status=DeliveryStatus.PENDING).count() == 2
    # Every failed delivery of a webhook.
    admin_client.post("/admin/events/webhook/", {"action": "redeliver_failed", "_selected_action": [hook.pk]})
    assert not Delivery.objects.filter(status=DeliveryStatus.FAILED).exists()
    third.refresh_from_db()
    assert DeliveryAttempt.objects.filter(delivery=third).count() == 1  # the history stays


def test_deleting_a_webhook_in_the_admin_deletes_its_deliveries(admin_client):
    game = make_game("arena")
    hook = webhook_create(game=game, url="http://127.0.0.1:9/hook")
    failed_deliveries(game, hook, 2)
    admin_client.post(f"/admin/events/webhook/{hook.pk}/delete/", {"post": "yes"})
    assert not Webhook.objects.exists() and not Delivery.objects.exists() and not DeliveryAttempt.objects.exists()
