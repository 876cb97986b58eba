"""Submissions while Redis cannot be reached: accepted into the ledger (PostgreSQL), the buckets
held in the process, the new players' display names written once Redis is back."""

import time

import pytest
from django.utils import timezone

from boards.keys import names_key
from common.redis import client
from scoring.testing import make_game, make_key, match_body, submit_direct, unapplied

pytestmark = pytest.mark.django_db


def test_results_are_accepted_and_new_names_reach_redis_once_it_is_back(settings):
    game = make_game()
    key = make_key(game)
    redis_url, settings.REDIS_URL = settings.REDIS_URL, "redis://127.0.0.1:1/0"
    body = match_body([{"player_id": "newbie", "points": 7, "display_name": "Newbie"}])
    outcome = submit_direct(game, key, body, now=timezone.now())
    assert outcome.http_status == 202 and outcome.body["results"][0]["status"] == "accepted"
    assert unapplied().count() == 1
    settings.REDIS_URL = redis_url
    deadline = time.monotonic() + 5
    while client().hget(names_key(game.slug), "newbie") is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client().hget(names_key(game.slug), "newbie") == "Newbie"
