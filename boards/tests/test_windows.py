"""Weekly boards re-derived from daily boards equal the live weekly boards."""

import io
import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from boards import keys
from boards.ranking import needs_distinct_points
from boards.testing import record
from common.redis import client as redis_client
from seasons.periods import week_label
from seasons.testing import make_game

pytestmark = pytest.mark.django_db


def rebuild_week(*args: str) -> dict:
    out = io.StringIO()
    call_command("rebuild_week", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize("rule", ["competition", "dense", "first"])
def test_rebuild_week_equals_the_live_week_and_restores_it(rule):
    start = datetime(2026, 11, 1, tzinfo=UTC)
    game = make_game(tie_rule=rule, start=start, days=60)
    rng = random.Random(5)
    accept = datetime(2026, 11, 29, 23, 0, tzinfo=UTC)
    for i in range(120):
        played = datetime(2026, 11, 23, tzinfo=UTC) + timedelta(minutes=rng.randint(0, 7 * 24 * 60 - 1))
        record(
            game,
            f"p{rng.randint(0, 30)}",
            rng.choice([0, rng.randint(1, 99)]),
            played_at=played,
            accepted_at=accept + timedelta(seconds=i * 7),
            region=rng.choice(["eu", "na"]),
        )
    season = game.seasons.get()
    week = week_label(datetime(2026, 11, 25, tzinfo=UTC))
    assert week == "2026-W48"
    check = rebuild_week("arena", week, "--season", str(season.id), "--check")
    assert check["boards"] == 3 and check["members"] > 30 and check["differences"] == 0
    client = redis_client()
    weekly = keys.BoardRef("arena", season.id, "weekly", "global", week).key
    before = client.zrange(weekly, 0, -1, withscores=True)
    companion = client.zrange(keys.distinct_key(weekly), 0, -1, withscores=True)
    client.delete(weekly, keys.distinct_key(weekly))
    rebuilt = rebuild_week("arena", week, "--season", str(season.id))
    assert rebuilt["swapped"] and rebuilt["differences"] > 0  # it differed from the deleted board
    assert client.zrange(weekly, 0, -1, withscores=True) == before
    assert client.ttl(weekly) > 13 * 86400
    assert client.zrange(keys.distinct_key(weekly), 0, -1, withscores=True) == companion  # empty unless dense
    assert needs_distinct_points(rule) == bool(companion)
