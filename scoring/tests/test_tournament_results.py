"""Results entering tournaments (docs/api.md, "Counting"): the `tournaments` field of a match, the
verdicts in the 202 answer in the contract's order, exact attempts and entrants, the ledger's
record of them, replays, and counters refilled from the ledger after Redis lost them."""

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from anticheat.services import ban_record
from common.redis import boards_client
from competitions import keys
from competitions.models import Tournament, TournamentEntrant
from competitions.services import entrant_join
from scoring.models import MatchSubmission, ScoreEvent, TournamentResult
from scoring.testing import (
    drain,
    make_game,
    make_key,
    match_body,
    outbox_restore,
    result_path,
    signed_post,
    submit_direct,
)

pytestmark = pytest.mark.django_db


def cup(game, slug="cup", **config):
    start = timezone.now() - timedelta(minutes=10)
    values = {"title": "Cup", "starts_at": start, "ends_at": start + timedelta(hours=2), "duration_s": 7200}
    values.update(config)
    return Tournament.objects.create(game=game, slug=slug, created_at=start, **values)


def verdicts(outcome, slug="cup"):
    return {r["player_id"]: r["tournaments"][slug] for r in outcome.body["results"]}


def attempts(game, slug, player, period=1):
    return int(boards_client().hget(keys.attempts_key(game.slug, slug, period), player) or 0)


def test_an_unknown_tournament_is_a_400_for_the_whole_match_and_stores_nothing(client):
    game = make_game()
    key = make_key(game)
    cup(game)
    body = match_body([{"player_id": "maya", "points": 5}], tournaments=["cup", "nope"])
    response = signed_post(client, key, result_path(game, uuid.uuid4()), body)
    assert (response.status_code, response.json()["code"]) == (400, "invalid")
    assert "nope" in response.json()["tournaments"][0]
    bad = signed_post(client, key, result_path(game, uuid.uuid4()), {**body, "tournaments": ["Cup!"]})
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid")
    eleven = signed_post(
        client, key, result_path(game, uuid.uuid4()), {**body, "tournaments": [f"t{i}" for i in range(11)]}
    )
    assert (eleven.status_code, eleven.json()["code"]) == (400, "invalid")
    assert not ScoreEvent.objects.exists()
    assert not MatchSubmission.objects.exists()
    assert not TournamentResult.objects.exists()


def test_verdicts_in_the_contracts_order_and_exact_attempts(client):
    game = make_game()
    key = make_key(game)
    tournament = cup(game, join_required=True, max_attempts=2)
    entrant_join(tournament=tournament, player_id="maya", now=timezone.now())
    ban_record(game=game, player_id="cheat")
    entrant_join(tournament=tournament, player_id="cheat", now=timezone.now())
    now = timezone.now()
    results = [{"player_id": p, "points": 10} for p in ("maya", "leo", "cheat")]
    first = submit_direct(game, key, match_body(results, tournaments=["cup"]), now=now)
    assert first.http_status == 202
    assert verdicts(first) == {"maya": "counted", "leo": "not_entered", "cheat": "not_counted"}
    assert first.body["results"][2]["status"] == "rejected"  # the season's status is unchanged
    second = submit_direct(game, key, match_body(results[:1], tournaments=["cup"]), now=now)
    third = submit_direct(game, key, match_body(results[:1], tournaments=["cup"]), now=now)
    assert (verdicts(second), verdicts(third)) == ({"maya": "counted"}, {"maya": "no_attempts_left"})
    before = submit_direct(
        game, key, match_body(results[:1], now - timedelta(minutes=20), tournaments=["cup"]), now=now
    )
    assert verdicts(before) == {"maya": "outside_period"}
    assert attempts(game, "cup", "maya") == 2
    rows = TournamentResult.objects.filter(player_id="maya").order_by("event_id")
    assert [(r.period, r.verdict) for r in rows] == [
        (1, "counted"),
        (1, "counted"),
        (1, "no_attempts_left"),
        (None, "outside_period"),
    ]


def test_without_join_required_a_first_result_enters_the_player_until_full(client):
    game = make_game()
    key = make_key(game)
    cup(game, max_entrants=2)
    now = timezone.now()
    answer = submit_direct(
        game, key, match_body([{"player_id": p, "points": 1} for p in ("a", "b", "c")], tournaments=["cup"]), now=now
    )
    assert verdicts(answer) == {"a": "counted", "b": "counted", "c": "full"}
    again = submit_direct(game, key, match_body([{"player_id": "a", "points": 3}], tournaments=["cup"]), now=now)
    assert verdicts(again) == {"a": "counted"}  # an entrant is not a new seat
    assert sorted(TournamentEntrant.objects.values_list("player_id", flat=True)) == ["a", "b"]


def test_a_replayed_match_counts_once_and_answers_the_same(client):
    game = make_game()
    key = make_key(game)
    cup(game, max_attempts=3)
    body = match_body([{"player_id": "maya", "points": 7}], tournaments=["cup"])
    path = result_path(game, uuid.uuid4())
    first = signed_post(client, key, path, body)
    again = signed_post(client, key, path, body)
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json() == first.json()
    assert first.json()["results"][0]["tournaments"] == {"cup": "counted"}
    assert attempts(game, "cup", "maya") == 1
    assert TournamentResult.objects.count() == 1


def test_counters_lost_by_redis_are_filled_again_from_the_ledger(client):
    game = make_game()
    key = make_key(game)
    cup(game, max_attempts=2, max_entrants=1)
    now = timezone.now()
    for _ in range(2):
        submit_direct(game, key, match_body([{"player_id": "maya", "points": 1}], tournaments=["cup"]), now=now)
    boards_client().flushall()
    after = submit_direct(
        game,
        key,
        match_body([{"player_id": "maya", "points": 1}, {"player_id": "leo", "points": 1}], tournaments=["cup"]),
        now=now,
    )
    assert verdicts(after) == {"maya": "no_attempts_left", "leo": "full"}


@pytest.mark.django_db(transaction=True)
def test_100_concurrent_results_of_one_player_with_3_attempts_count_exactly_3():
    game = make_game()
    key = make_key(game)
    cup(game, max_attempts=3)

    def send(i: int) -> str:
        try:
            body = match_body([{"player_id": "maya", "points": i}], tournaments=["cup"])
            return verdicts(submit_direct(game, key, body, now=timezone.now()))["maya"]
        finally:
            connection.close()

    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(send, range(100)))
    assert outcomes.count("counted") == 3
    assert outcomes.count("no_attempts_left") == 97
    assert TournamentResult.objects.filter(verdict="counted").count() == 3
    assert attempts(game, "cup", "maya") == 3


def board_points(game, tournament, period=1):
    """The period's board as {player: points shown}, read straight from Redis."""
    from competitions.boards import period_time_bits

    span = 1 << period_time_bits(tournament)
    raw = boards_client().zrange(keys.board_key(game.slug, tournament.slug, period), 0, -1, withscores=True)
    capacity = (1 << (53 - period_time_bits(tournament))) - 1
    shown = {}
    for member, score in raw:
        points = int(score) // span
        shown[member] = capacity - points if tournament.order == "asc" else points
    return shown


@pytest.mark.parametrize(
    ("scoring", "order", "expected"),
    [
        ("best", "desc", {"maya": 30, "leo": 5}),
        ("sum", "desc", {"maya": 40, "leo": 5}),
        ("best", "asc", {"maya": 10, "leo": 5}),
    ],
)
def test_counted_results_reach_the_period_board_once_by_the_same_apply(scoring, order, expected):
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring=scoring, order=order, max_attempts=2)
    now = timezone.now()
    for player, points in [("maya", 10), ("maya", 30), ("maya", 99), ("leo", 5)]:
        submit_direct(game, key, match_body([{"player_id": player, "points": points}], tournaments=["cup"]), now=now)
    drain()
    assert board_points(game, tournament) == expected  # maya's third result had no attempt left
    outbox_restore(ScoreEvent.objects.all())  # a worker killed after its Lua call: everything again
    drain()
    assert board_points(game, tournament) == expected
    plain = submit_direct(game, key, match_body([{"player_id": "ana", "points": 50}]), now=now)
    drain()
    assert "tournaments" not in plain.body["results"][0]
    assert "ana" not in board_points(game, tournament)
