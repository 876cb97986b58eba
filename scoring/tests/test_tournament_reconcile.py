"""The reconciliation covers the tournament periods that are not final (reconcile_periods.py): a
period board that lost a player's score, holds a wrong one or a ghost, and counters (attempts,
entrants) apart from the ledger are found, counted exactly and repaired; lost counters are filled;
a final period is left alone."""

from datetime import timedelta

import pytest
from django.utils import timezone

from common.redis import boards_client
from competitions import keys
from competitions.boards import period_time_bits
from competitions.services import entrant_join
from competitions.testing import period_state
from scoring.reconcile import boards_reconcile
from scoring.recovery import boards_recover_if_lost
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_tournament_results import cup

pytestmark = pytest.mark.django_db


def seeded(scoring):
    boards_recover_if_lost()  # the boards marker, as the beat writes it at the first start
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring=scoring, max_attempts=3, max_entrants=10)
    for results in [[("maya", 10), ("leo", 20)], [("maya", 30), ("ana", 5)]]:
        body = match_body([{"player_id": p, "points": n} for p, n in results], tournaments=["cup"])
        submit_direct(game, key, body, now=timezone.now())
    drain()
    entrant_join(tournament=tournament, player_id="ivy", now=timezone.now())  # an entrant, no result
    return game, tournament


def state(game):
    return period_state(boards_client(), game.slug, "cup", 1)


@pytest.mark.parametrize("scoring", ["best", "latest"])
def test_a_damaged_period_board_and_its_counters_are_repaired_exactly(scoring):
    game, tournament = seeded(scoring)
    board, attempts, entrants = before = state(game)
    assert set(board) == {"maya", "leo", "ana"} and attempts["maya"] == "2" and "ivy" in entrants
    redis = boards_client()
    span = 1 << period_time_bits(tournament)
    board_key = keys.board_key(game.slug, "cup", 1)
    redis.zrem(board_key, "leo")  # a lost score
    redis.zadd(board_key, {"maya": board["maya"] + span, "ghost": 5 * span})  # a wrong one, a ghost
    redis.hset(keys.attempts_key(game.slug, "cup", 1), mapping={"maya": 1, "ana": 3})  # behind, ahead
    redis.srem(keys.entrants_key(game.slug, "cup", 1), "ivy")
    redis.sadd(keys.entrants_key(game.slug, "cup", 1), "stranger")

    report = boards_reconcile(game=game, repair=True)
    assert (report.periods, report.drift, report.drifted_players) == (1, 7, 6), report
    assert (report.pending, report.moved, report.unrepaired) == (0, 0, 0)
    assert state(game) == before
    again = boards_reconcile(game=game)
    assert (again.periods, again.drift, again.candidates) == (1, 0, 0)


def test_counters_that_lost_their_data_are_filled_and_a_dry_run_repairs_nothing():
    game, _ = seeded("best")
    before = state(game)
    boards_client().delete(keys.attempts_key(game.slug, "cup", 1))
    report = boards_reconcile(game=game)
    assert (report.counters_filled, report.drift) == (1, 0)
    assert state(game) == before
    boards_client().zrem(keys.board_key(game.slug, "cup", 1), "leo")
    dry = boards_reconcile(game=game, repair=False)
    assert (dry.drift, dry.repaired, dry.examples[0][1]) == (1, 0, "leo")
    assert "leo" not in state(game)[0]


def test_a_final_period_is_not_compared():
    game, tournament = seeded("best")
    tournament.grace_s = 0
    tournament.ends_at = timezone.now() - timedelta(seconds=1)
    tournament.save()
    boards_client().zrem(keys.board_key(game.slug, "cup", 1), "leo")
    report = boards_reconcile(game=game)
    assert (report.periods, report.drift) == (0, 0)
