"""Weekly boards re-derived from daily boards equal the live weekly boards."""

import io
import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from leaderboard_site.testing import drain, make_game, make_key, match_body, submit_direct
from scoring import redis_boards
from seasons.periods import week_label

pytestmark = pytest.mark.django_db


def rebuild_week(*args: str) -> dict:
    out = io.StringIO()
    call_command("rebuild_week", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize("rule", ["competition", "first"])
def test_rebuild_week_equals_the_live_week_and_restores_it(rule):
    start = datetime(2026, 11, 1, tzinfo=UTC)
    game = make_game(tie_rule=rule, start=start, days=60)
    key = make_key(game)
    rng = random.Random(5)
    accept = datetime(2026, 11, 29, 23, 0, tzinfo=UTC)
    for i in range(120):
        played = datetime(2026, 11, 23, tzinfo=UTC) + timedelta(minutes=rng.randint(0, 7 * 24 * 60 - 1))
        results = [
            {
                "player_id": f"p{rng.randint(0, 30)}",
                "points": rng.choice([0, rng.randint(1, 99)]),
                "region": rng.choice(["eu", "na"]),
            }
        ]
        submit_direct(game, key, match_body(results, played), now=accept + timedelta(seconds=i * 7))
    drain()
    season = game.seasons.get()
    week = week_label(datetime(2026, 11, 25, tzinfo=UTC))
    assert week == "2026-W48"
    check = rebuild_week("arena", week, "--season", str(season.id), "--check")
    assert check["boards"] == 3 and check["members"] > 30 and check["differences"] == 0
    client = redis_boards.client()
    weekly = redis_boards.BoardRef("arena", season.id, "weekly", "global", week).key
    before = client.zrange(weekly, 0, -1, withscores=True)
    client.delete(weekly)
    rebuilt = rebuild_week("arena", week, "--season", str(season.id))
    assert rebuilt["swapped"] and rebuilt["differences"] > 0  # it differed from the deleted board
    assert client.zrange(weekly, 0, -1, withscores=True) == before
    assert client.ttl(weekly) > 13 * 86400
