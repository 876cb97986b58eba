"""The tournaments' admin: create under the API's rules, refuse a change after the start, end."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from competitions.models import Tournament
from seasons.testing import make_game

pytestmark = pytest.mark.django_db


def form(game, **changes):
    start = timezone.now() - timedelta(minutes=1)
    data = {
        "game": game.pk,
        "slug": "cup",
        "title": "Cup",
        "description": "",
        "category": 0,
        "metadata": "{}",
        "scoring": "best",
        "order": "desc",
        "starts_at_0": start.strftime("%Y-%m-%d"),
        "starts_at_1": start.strftime("%H:%M:%S"),
        "ends_at_0": "",
        "ends_at_1": "",
        "duration_s": 3600,
        "reset": "",
        "grace_s": 60,
        "max_entrants": "",
        "max_attempts": "",
        "rewards": "[]",
    }
    data.update(changes)
    return data


def test_create_edit_and_end_from_the_admin(client):
    game = make_game("arena")
    client.force_login(User.objects.create_superuser("op", password="pw"))
    created = client.post("/admin/competitions/tournament/add/", form(game))
    assert created.status_code == 302, created.content.decode()[:2000]
    cup = Tournament.objects.get()
    assert cup.ends_at == cup.starts_at + timedelta(hours=1) or cup.ends_at is None
    page = client.get(f"/admin/competitions/tournament/{cup.pk}/change/")
    assert page.status_code == 200
    assert b"<th>entrants</th>" in page.content
    refused = client.post(f"/admin/competitions/tournament/{cup.pk}/change/", form(game, max_attempts=3))
    assert refused.status_code == 200
    assert b"cannot change now: max_attempts" in refused.content
    assert Tournament.objects.get().max_attempts is None
    ended = client.post(
        "/admin/competitions/tournament/", {"action": "end_now", "_selected_action": [cup.pk]}, follow=True
    )
    assert ended.status_code == 200
    assert Tournament.objects.get().ended_at is not None
