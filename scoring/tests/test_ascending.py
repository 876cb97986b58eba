"""Lower-is-better boards (speedrun times, golf strokes): each tie rule, best value only improves."""

import io
import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from common.redis import client as redis_client
from scoring.rebuild import boards_rebuild
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from seasons.models import Game

pytestmark = pytest.mark.django_db

EXPECTED = {
    "competition": [1, 1, 3, 4],
    "dense": [1, 1, 2, 3],
    "first": [1, 2, 3, 4],
}


def ascending_game(rule: str) -> Game:
    return make_game(tie_rule=rule, start=timezone.now() - timedelta(days=2), max_points=3_600_000, ascending=True)


@pytest.mark.parametrize("rule", ["competition", "dense", "first"])
def test_the_lowest_time_wins_and_a_worse_run_changes_nothing(client, rule):
    game = ascending_game(rule)
    key = make_key(game)
    start = timezone.now() - timedelta(hours=1)
    runs = [("bob", 61_000), ("amy", 61_000), ("cat", 75_500), ("dan", 90_000)]  # ms; bob reached it first
    for i, (player, ms) in enumerate(runs):
        submit_direct(
            game, key, match_body([{"player_id": player, "points": ms}], start), now=start + timedelta(seconds=i)
        )
    submit_direct(
        game, key, match_body([{"player_id": "dan", "points": 99_000}], start), now=start + timedelta(seconds=9)
    )
    drain()
    top = client.get("/api/v1/games/arena/boards/all/top").json()["entries"]
    assert [(e["player_id"], e["score"], e["rank"]) for e in top] == [
        (p, ms, rank) for (p, ms), rank in zip(runs, EXPECTED[rule], strict=True)
    ]
    dan = client.get("/api/v1/games/arena/boards/best/players/dan").json()
    assert (dan["score"], dan["percentile"]) == (90_000, 0.0)  # nobody is slower
    assert client.get("/api/v1/games/arena/boards/all/players/bob").json()["percentile"] == 50.0  # 2 of 4 slower
    submit_direct(
        game, key, match_body([{"player_id": "dan", "points": 59_000}], start), now=start + timedelta(seconds=20)
    )
    drain()
    day = start.astimezone(UTC).date().isoformat()  # the run's day: before 01:00 UTC it is yesterday
    assert client.get(f"/api/v1/games/arena/boards/daily/players/dan?period={day}").json()["rank"] == 1
    assert boards_diff(game=game, now=timezone.now()) == {}
    buckets = client.get("/api/v1/games/arena/boards/all/distribution").json()["buckets"]
    assert buckets[0]["min_score"] == 59_000 and buckets[-1]["max_score"] == 75_500


def test_ascending_boards_rebuild_freeze_and_derive_weeks_exactly(client):
    game = ascending_game("competition")
    key = make_key(game)
    rng = random.Random(3)
    for i in range(60):
        played = timezone.now() - timedelta(hours=rng.randint(1, 40))
        submit_direct(
            game,
            key,
            match_body([{"player_id": f"p{rng.randint(0, 12)}", "points": rng.randint(50, 500)}], played),
            now=timezone.now() + timedelta(seconds=i),
        )
    drain()
    before = client.get("/api/v1/games/arena/boards/all/top?n=20").json()["entries"]
    redis_client().flushall()
    boards_rebuild(game=game)
    assert boards_diff(game=game, now=timezone.now()) == {}
    week = datetime.now(UTC).strftime("%G-W%V")
    out = io.StringIO()
    call_command("rebuild_week", "arena", week, "--check", stdout=out)
    assert json.loads(out.getvalue())["differences"] == 0
    season = game.seasons.get()
    out = io.StringIO()
    call_command("end_season", "arena", "--grace-s", "0", stdout=out)
    frozen = client.get(f"/api/v1/games/arena/boards/all/top?n=20&season={season.id}").json()["entries"]
    assert frozen == before
