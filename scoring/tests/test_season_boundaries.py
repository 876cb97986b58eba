"""Season creation."""

import uuid

import pytest
from django.utils import timezone

from scoring.testing import iso, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db


def test_a_result_in_the_first_second_of_a_season_started_now_counts():
    start = timezone.now()
    game = make_game(start=start)
    season = game.seasons.get()
    assert season.starts_at.microsecond == 0
    body = match_body([{"player_id": "a", "points": 1}], played_at=start.replace(microsecond=0))
    assert body["played_at"] == iso(start)
    outcome = submit_direct(game, make_key(game), body, now=timezone.now(), match_id=uuid.uuid4())
    assert outcome.http_status == 202
