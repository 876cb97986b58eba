"""The review queue in the admin: moderators approve or revoke in bulk, with a reason, audited."""

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from anticheat.models import AuditEntry
from scoring.models import ScoreEvent
from scoring.moderation import results_approve, results_revoke
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db

QUEUE = "/admin/scoring/reviewitem/"


def quarantined_game():
    game = make_game(rate_limits=True)
    key = make_key(game)
    now = timezone.now()
    for i in range(7):  # the bucket holds 5: two go to review
        submit_direct(game, key, match_body([{"player_id": "amy", "points": 10 + i}]), now=now)
    submit_direct(game, key, match_body([{"player_id": "bob", "points": 12}]), now=now)
    drain()
    return game


def test_a_moderator_filters_the_queue_and_bulk_approves_with_a_reason(client, moderator):
    game = quarantined_game()
    client.force_login(moderator)
    listing = client.get(QUEUE + "?status__exact=pending_review")
    assert listing.status_code == 200 and b"rate" in listing.content
    pending = list(ScoreEvent.objects.filter(status="pending_review").values_list("id", flat=True))
    assert len(pending) == 2
    form = {"action": "approve", "_selected_action": pending}
    confirm = client.post(QUEUE, form)
    assert confirm.status_code == 200 and b"Reason" in confirm.content  # the confirmation page
    refused = client.post(QUEUE, {**form, "confirm": "yes", "reason": ""})
    assert b"A reason is required" in refused.content
    assert ScoreEvent.objects.filter(status="pending_review").count() == 2
    done = client.post(QUEUE, {**form, "confirm": "yes", "reason": "tournament final, verified"})
    assert done.status_code == 302
    assert ScoreEvent.objects.filter(status="pending_review").count() == 0
    drain()
    assert client.get("/api/v1/games/arena/boards/all/players/amy").json()["score"] == sum(range(10, 17))
    assert AuditEntry.objects.filter(action="approve", actor=moderator).count() == 2
    assert boards_diff(game=game, now=timezone.now()) == {}
    history = client.get(f"{QUEUE}{pending[0]}/change/")
    assert b"tournament final, verified" in history.content


def test_bulk_revoke_corrects_the_boards_exactly(client, moderator):
    game = quarantined_game()
    client.force_login(moderator)
    amy = list(ScoreEvent.objects.filter(player_id="amy", status="accepted").values_list("id", flat=True)[:3])
    client.post(QUEUE, {"action": "revoke", "_selected_action": amy, "confirm": "yes", "reason": "aimbot"})
    assert ScoreEvent.objects.filter(id__in=amy, status="revoked").count() == 3
    assert boards_diff(game=game, now=timezone.now()) == {}
    remaining = sum(ScoreEvent.objects.filter(player_id="amy", status="accepted").values_list("points", flat=True))
    assert client.get("/api/v1/games/arena/boards/all/players/amy").json()["score"] == remaining


def test_staff_outside_the_moderators_group_cannot_act(client):
    quarantined_game()
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    client.force_login(user)
    pending = list(ScoreEvent.objects.filter(status="pending_review").values_list("id", flat=True))
    client.post(QUEUE, {"action": "approve", "_selected_action": pending, "confirm": "yes", "reason": "x"})
    assert ScoreEvent.objects.filter(status="pending_review").count() == 2


def test_approve_and_revoke_in_either_order_leave_no_ghost():
    game = quarantined_game()
    pending = list(ScoreEvent.objects.filter(status="pending_review").values_list("id", flat=True))
    assert results_revoke(event_ids=pending[:1], reason="r").changed == 1
    assert results_approve(event_ids=pending, reason="a").changed == 1  # the revoked one is skipped
    drain()
    assert results_revoke(event_ids=pending, reason="r").changed == 1
    drain()
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert ScoreEvent.objects.filter(id__in=pending, status="revoked").count() == 2


def test_a_disqualification_is_reversible(client, moderator):
    from scoring.moderation import results_reinstate

    game = quarantined_game()
    client.force_login(moderator)
    amy = list(ScoreEvent.objects.filter(player_id="amy", status="accepted").values_list("id", flat=True)[:2])
    before = client.get("/api/v1/games/arena/boards/all/players/amy").json()["score"]
    results_revoke(event_ids=amy, reason="suspected")
    client.post(QUEUE, {"action": "reinstate", "_selected_action": amy, "confirm": "yes", "reason": "appeal won"})
    assert results_reinstate(event_ids=amy, reason="again").changed == 0  # already reinstated
    drain()
    assert client.get("/api/v1/games/arena/boards/all/players/amy").json()["score"] == before
    assert boards_diff(game=game, now=timezone.now()) == {}


def test_keys_and_bans_from_the_admin_are_audited(client, moderator):
    from anticheat.models import Ban, ServerKey

    game = quarantined_game()
    admin_user = User.objects.create_superuser("root", password="pw")
    client.force_login(admin_user)
    before = set(ServerKey.objects.values_list("key_id", flat=True))
    response = client.post("/admin/anticheat/serverkey/add/", {"game": game.pk, "label": "eu-1"}, follow=True)
    assert response.status_code == 200
    [key] = ServerKey.objects.exclude(key_id__in=before)
    page = response.content.decode()
    assert f"secret {key.secret}" in page  # shown once, on the page after adding it
    assert key.label == "eu-1"
    assert AuditEntry.objects.filter(action="create_key", target=key.key_id, actor_label="root").exists()
    assert key.secret not in client.get(f"/admin/anticheat/serverkey/{key.pk}/change/").content.decode()
    client.post("/admin/anticheat/serverkey/", {"action": "rotate_keys", "_selected_action": [key.pk]})
    key.refresh_from_db()
    assert key.expires_at is not None
    client.post(
        "/admin/anticheat/ban/add/",
        {"game": game.pk, "player_id": "amy", "reason": "cheating", "revoke_since": "2020-01-01 00:00:00"},
    )
    assert Ban.objects.filter(player_id="amy", lifted_at__isnull=True).exists()
    assert ScoreEvent.objects.filter(player_id="amy", status__in=["accepted", "pending_review"]).count() == 0
    assert {"create_key", "rotate_key", "ban"} <= set(AuditEntry.objects.values_list("action", flat=True))
    assert boards_diff(game=game, now=timezone.now()) == {}
