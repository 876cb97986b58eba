"""A player hidden or deleted leaves the boards of tournament periods that are not final, and every
rank there; the reads (both entrances) no longer show them; shown again, their counted results
come back from the ledger."""

from datetime import timedelta

import pytest
from django.utils import timezone

from competitions.services import entrant_join
from scoring.players import player_delete, player_update
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_tournament_reads import same
from scoring.tests.test_tournament_results import board_points, cup

pytestmark = pytest.mark.django_db

BASE = "/api/v1/games/arena/tournaments/cup"


def play(game, key, results):
    body = match_body([{"player_id": p, "points": points} for p, points in results], tournaments=["cup"])
    return submit_direct(game, key, body, now=timezone.now())


def ranks():
    return [(e["player_id"], e["rank"]) for e in same(f"{BASE}/top").json()["entries"]]


@pytest.mark.parametrize("scoring", ["best", "latest"])
def test_a_hidden_or_deleted_player_leaves_the_live_period_and_its_ranks(scoring):
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring=scoring, max_attempts=3)
    play(game, key, [("maya", 10), ("leo", 20), ("ana", 30)])
    drain()
    entrant_join(tournament=tournament, player_id="ivy", now=timezone.now())  # an entrant, no result
    same(f"{BASE}/top", fast=False)  # Django's read publishes the tournament for the fast entrance
    assert ranks() == [("ana", 1), ("leo", 2), ("maya", 3)]

    player_update(game=game, player_id="ana", hidden=True)
    player_update(game=game, player_id="ivy", hidden=True)
    assert board_points(game, tournament) == {"leo": 20, "maya": 10}
    assert ranks() == [("leo", 1), ("maya", 2)]
    assert same(f"{BASE}/players/maya").json()["rank"] == 2
    for hidden in ("ana", "ivy"):
        assert same(f"{BASE}/players/{hidden}").status_code == 404
        assert same(f"{BASE}/players/{hidden}/around").status_code == 404
    play(game, key, [("ana", 40)])  # counted in the ledger (an attempt), never on the board while hidden
    drain()
    assert board_points(game, tournament) == {"leo": 20, "maya": 10}

    player_delete(game=game, player_id="leo")
    assert board_points(game, tournament) == {"maya": 10}
    assert ranks() == [("maya", 1)]
    assert same(f"{BASE}/players/leo").status_code == 404

    player_update(game=game, player_id="ana", hidden=False)  # shown again: back from the ledger
    assert board_points(game, tournament) == {"maya": 10, "ana": 40}
    ana = same(f"{BASE}/players/ana").json()
    assert (ana["score"], ana["rank"], ana["attempts"]) == (40, 1, 2)


def test_a_final_period_is_not_rewritten_by_a_hide():
    game = make_game()
    key = make_key(game)
    start = timezone.now() - timedelta(minutes=30)
    tournament = cup(game, starts_at=start, ends_at=start + timedelta(hours=2), duration_s=7200)
    play(game, key, [("maya", 10), ("leo", 20)])
    drain()
    tournament.grace_s = 0
    tournament.ends_at = timezone.now() - timedelta(seconds=1)  # the period is final now
    tournament.save()
    player_update(game=game, player_id="leo", hidden=True)
    assert board_points(game, tournament) == {"maya": 10, "leo": 20}  # its standings are PostgreSQL's
