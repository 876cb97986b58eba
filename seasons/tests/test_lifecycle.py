"""The season lifecycle of the calendar alone: schedules start seasons, the admin keeps seasons
of a game apart. (Ending and freezing a season, with its boards: scoring/tests/test_season_end.py.)"""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from seasons.models import Season
from seasons.services import seasons_schedule_next
from seasons.tasks import rotate
from seasons.testing import make_game

pytestmark = pytest.mark.django_db


def test_a_season_schedule_starts_the_next_season_when_one_ends():
    game = make_game(start=timezone.now() - timedelta(days=8), days=7)
    game.season_schedule_days = 7
    game.save()
    rotate()
    seasons = list(game.seasons.order_by("starts_at"))
    assert len(seasons) == 2
    assert seasons[1].starts_at == seasons[0].ends_at
    assert seasons[1].ends_at - seasons[1].starts_at == timedelta(days=7)


def test_admin_refuses_overlapping_or_inverted_seasons(client, admin_user):
    game = make_game(start=timezone.now() - timedelta(days=3), days=10)
    client.force_login(admin_user)
    season = game.seasons.get()
    form = {
        "game": game.id,
        "name": "Overlap",
        "starts_at_0": (season.starts_at + timedelta(days=1)).strftime("%Y-%m-%d"),
        "starts_at_1": "00:00:00",
        "ends_at_0": (season.starts_at + timedelta(days=20)).strftime("%Y-%m-%d"),
        "ends_at_1": "00:00:00",
        "grace_s": 60,
    }
    response = client.post("/admin/seasons/season/add/", form)
    assert response.status_code == 200 and b"must not overlap" in response.content
    form.update(starts_at_0="2030-01-10", ends_at_0="2030-01-01")
    response = client.post("/admin/seasons/season/add/", form)
    assert b"ends after it starts" in response.content
    assert Season.objects.count() == 1
    form.update(
        name="Next",
        starts_at_0=season.ends_at.strftime("%Y-%m-%d"),
        starts_at_1=season.ends_at.strftime("%H:%M:%S"),
        ends_at_0=(season.ends_at + timedelta(days=7)).strftime("%Y-%m-%d"),
        # The same time of day: a window of exactly 7 days (with 00:00:00, a season ending after
        # 22:22 UTC made it short enough for 19 bits, and the test failed late in the day).
        ends_at_1=season.ends_at.strftime("%H:%M:%S"),
    )
    response = client.post("/admin/seasons/season/add/", form)
    assert response.status_code == 302
    added = Season.objects.get(name="Next")
    assert added.time_bits == 20 and added.starts_at == season.ends_at


def test_a_cron_schedule_makes_weekly_seasons_from_monday_midnight():
    game = make_game(start=datetime(2026, 11, 23, tzinfo=UTC), days=7)  # Monday to Monday
    game.season_schedule_cron = "0 0 * * 1"
    game.save()
    created = seasons_schedule_next(now=datetime(2026, 11, 30, 0, 0, 5, tzinfo=UTC))
    assert [(s.starts_at, s.ends_at) for s in created] == [
        (datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 7, tzinfo=UTC))
    ]
    assert seasons_schedule_next(now=datetime(2026, 12, 1, tzinfo=UTC)) == []  # the new one is running


def test_admin_keeps_a_started_seasons_window_around_its_results(client, admin_user):
    """The ledger reads a season's results by its window (by month): once the season has started,
    its start may move earlier but not later, its end later but not before now."""
    game = make_game(start=timezone.now() - timedelta(days=3), days=10)
    client.force_login(admin_user)
    season = game.seasons.get()

    def change(starts: datetime, ends: datetime):
        form = {
            "game": game.id,
            "name": season.name,
            "starts_at_0": starts.strftime("%Y-%m-%d"),
            "starts_at_1": starts.strftime("%H:%M:%S"),
            "ends_at_0": ends.strftime("%Y-%m-%d"),
            "ends_at_1": ends.strftime("%H:%M:%S"),
            "grace_s": season.grace_s,
        }
        return client.post(f"/admin/seasons/season/{season.id}/change/", form)

    later = change(season.starts_at + timedelta(days=1), season.ends_at)
    assert later.status_code == 200 and b"cannot start later" in later.content
    past = change(season.starts_at, timezone.now() - timedelta(hours=1))
    assert past.status_code == 200 and b"cannot end before now" in past.content
    assert Season.objects.get(pk=season.pk).ends_at == season.ends_at  # nothing saved
    wider = change(season.starts_at - timedelta(days=1), season.ends_at + timedelta(days=1))
    assert wider.status_code == 302
    assert Season.objects.get(pk=season.pk).starts_at == season.starts_at - timedelta(days=1)
