"""Bans: new results rejected; revoking results since a moment corrects every board exactly."""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from scoring.models import ScoreEvent, SeasonTotal
from scoring.selectors import boards_diff
from scoring.testing import drain, iso, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db


def ban(*args: str) -> dict:
    out = io.StringIO()
    call_command("ban_player", *args, stdout=out)
    return json.loads(out.getvalue())


def test_a_banned_players_new_results_are_rejected_and_stored():
    game = make_game()
    key = make_key(game)
    assert ban("arena", "mallory") == {"player_id": "mallory", "banned": True, "revoked": 0}
    assert ban("arena", "mallory")["banned"]  # idempotent
    outcome = submit_direct(
        game,
        key,
        match_body([{"player_id": "mallory", "points": 9}, {"player_id": "amy", "points": 1}]),
        now=timezone.now(),
    )
    assert outcome.body["results"] == [
        {"player_id": "mallory", "status": "rejected", "reason": "banned"},
        {"player_id": "amy", "status": "accepted"},
    ]
    assert ScoreEvent.objects.get(player_id="mallory").status == "rejected"


@pytest.mark.parametrize("rule", ["competition", "dense"])
def test_revoke_since_removes_exactly_those_results_from_every_board(client, rule):
    start = timezone.now() - timedelta(days=5)
    game = make_game(tie_rule=rule, start=start)
    key = make_key(game)
    t0 = timezone.now() - timedelta(days=3)
    cut = timezone.now() - timedelta(days=2)
    rows = [
        ("mallory", 40, t0, "eu"),
        ("mallory", 500, cut + timedelta(hours=1), "eu"),
        ("mallory", 300, cut + timedelta(hours=30), "eu"),
        ("eve", 200, cut + timedelta(hours=2), None),  # only results after the cut
        ("amy", 100, t0, "eu"),
        ("bob", 40, cut + timedelta(hours=3), "eu"),
    ]
    for player, points, played, region in rows:
        result = {"player_id": player, "points": points, **({"region": region} if region else {})}
        submit_direct(game, key, match_body([result], played), now=timezone.now())
    drain()
    # One more result of mallory's is still in the queue when the ban lands.
    submit_direct(
        game, key, match_body([{"player_id": "mallory", "points": 7}], cut + timedelta(hours=40)), now=timezone.now()
    )
    ban("arena", "eve", "--revoke-since", iso(cut))
    answer = ban("arena", "mallory", "--revoke-since", iso(cut))
    assert answer == {"player_id": "mallory", "banned": True, "revoked": 3}
    drain()  # the queued event was revoked in the ledger: the worker skips it
    assert boards_diff(game=game, now=timezone.now()) == {}
    base = "/api/v1/games/arena/boards"
    assert client.get(f"{base}/all/players/mallory").json()["score"] == 40
    assert client.get(f"{base}/best/players/mallory").json()["score"] == 40
    assert client.get(f"{base}/all/players/eve").json()["code"] == "not_ranked"
    assert client.get(f"{base}/all/players/mallory?region=eu").json()["rank"] == 2  # amy 100, mallory 40 = bob 40
    assert client.get(f"{base}/all/players/bob?region=eu").json()["rank"] == 2
    season = game.seasons.get()
    assert SeasonTotal.objects.get(season=season, player_id="mallory").points == 40


def test_a_correction_does_not_count_a_queued_result_twice():
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "amy", "points": 5}]), now=timezone.now())
    # Unapplied when the correction reads the ledger: the correction includes it and marks it
    # applied in Redis, so the worker's later apply must skip it.
    from scoring.corrections import player_correct

    player_correct(game=game, player_id="amy")
    drain()
    assert boards_diff(game=game, now=timezone.now()) == {}
