"""Tournament boards rewritten from the ledger (competitions/scores.py): `latest` and `sum` with
`asc`, a revoked or withheld result taken off as if it had never counted (its attempt given
back), an approved pending result counted then, a result the worker refused for overflow, and the
boards rebuilt from the ledger after Redis lost them."""

from datetime import timedelta

import pytest
from django.utils import timezone

from boards.codec import ScoreCodec
from boards.keys import BoardRef
from common.redis import boards_client
from competitions import keys
from scoring.models import ScoreEvent, TournamentResult
from scoring.moderation import results_approve, results_revoke
from scoring.rebuild import boards_rebuild
from scoring.testing import drain, make_game, make_key, match_body, outbox_restore, submit_direct
from scoring.tests.test_tournament_results import attempts, board_points, cup, verdicts

pytestmark = pytest.mark.django_db


def play(game, key, player, points, *, played_at=None, now=None):
    body = match_body([{"player_id": player, "points": points}], played_at=played_at, tournaments=["cup"])
    return submit_direct(game, key, body, now=now or timezone.now())


@pytest.mark.parametrize(
    ("scoring", "order", "expected"),
    [
        ("latest", "desc", {"maya": 10, "leo": 7}),
        ("latest", "asc", {"maya": 10, "leo": 7}),
        ("sum", "asc", {"maya": 70, "leo": 12}),
    ],
)
def test_latest_and_sum_asc_boards_follow_the_ledger_once(scoring, order, expected):
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring=scoring, order=order)
    now = timezone.now()
    # maya's last played result arrives first: "latest" is by played_at, not by arrival.
    play(game, key, "maya", 10, played_at=now - timedelta(seconds=5))
    play(game, key, "maya", 60, played_at=now - timedelta(seconds=30))
    play(game, key, "leo", 5, played_at=now - timedelta(seconds=40))
    play(game, key, "leo", 7, played_at=now - timedelta(seconds=20))
    drain()
    assert board_points(game, tournament) == expected
    outbox_restore(ScoreEvent.objects.all())  # a worker killed after its writes: everything again
    drain()
    assert board_points(game, tournament) == expected
    ranked = boards_client().zrevrange(keys.board_key(game.slug, "cup", 1), 0, -1)
    better_first = sorted(expected, key=lambda p: expected[p], reverse=order == "desc")
    assert ranked == better_first


def test_a_latest_result_played_at_the_same_second_is_decided_by_acceptance():
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring="latest")
    played = timezone.now() - timedelta(seconds=10)
    play(game, key, "maya", 40, played_at=played)
    play(game, key, "maya", 3, played_at=played)
    drain()
    assert board_points(game, tournament) == {"maya": 3}


@pytest.mark.parametrize("scoring", ["best", "sum", "latest"])
def test_a_revoked_result_leaves_the_board_as_if_it_never_counted(scoring):
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring=scoring, max_attempts=2)
    now = timezone.now()
    play(game, key, "maya", 10, played_at=now - timedelta(seconds=30))
    play(game, key, "maya", 50, played_at=now - timedelta(seconds=20))
    play(game, key, "leo", 5)
    assert verdicts(play(game, key, "maya", 70)) == {"maya": "no_attempts_left"}
    drain()
    assert attempts(game, "cup", "maya") == 2
    top = ScoreEvent.objects.get(player_id="maya", points=50)
    results_revoke(event_ids=[top.id], reason="cheat")
    assert board_points(game, tournament) == {"maya": 10, "leo": 5}
    assert attempts(game, "cup", "maya") == 1  # given back: the next result counts
    assert verdicts(play(game, key, "maya", 20)) == {"maya": "counted"}
    drain()
    assert board_points(game, tournament)["maya"] == {"best": 20, "sum": 30, "latest": 20}[scoring]
    outbox_restore(ScoreEvent.objects.filter(status="accepted"))  # redelivered: nothing changes
    drain()
    assert board_points(game, tournament)["maya"] == {"best": 20, "sum": 30, "latest": 20}[scoring]
    lone = ScoreEvent.objects.get(player_id="leo")
    results_revoke(event_ids=[lone.id], reason="cheat")
    assert "leo" not in board_points(game, tournament)


def test_a_pending_result_counts_when_approved_and_not_after_its_period_is_final():
    game = make_game(rate_limits=True)
    key = make_key(game)
    tournament = cup(game, scoring="sum")
    now = timezone.now()
    outcomes = [verdicts(play(game, key, "amy", 10 + i, now=now)) for i in range(7)]  # the bucket holds 5
    assert [o["amy"] for o in outcomes].count("not_counted") == 2
    drain()
    assert board_points(game, tournament) == {"amy": sum(10 + i for i in range(5))}
    pending = list(ScoreEvent.objects.filter(status="pending_review").order_by("id"))
    results_approve(event_ids=[pending[0].id], reason="verified")
    row = TournamentResult.objects.get(event=pending[0])
    assert (row.verdict, row.period) == ("counted", 1)
    assert attempts(game, "cup", "amy") == 6
    drain()
    assert board_points(game, tournament) == {"amy": sum(10 + i for i in range(6))}
    tournament.ends_at = now - timedelta(minutes=1)  # the period is over and its grace (0 s) too
    tournament.save()
    results_approve(event_ids=[pending[1].id], reason="verified")
    assert TournamentResult.objects.get(event=pending[1]).verdict == "outside_period"
    drain()
    assert board_points(game, tournament) == {"amy": sum(10 + i for i in range(6))}


def test_a_result_the_worker_refuses_for_overflow_is_off_the_tournament_board_with_its_attempt_back():
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring="sum", max_attempts=3)
    play(game, key, "maya", 10)
    drain()
    late = play(game, key, "maya", 5)
    assert verdicts(late) == {"maya": "counted"}
    # The season board already near its exact capacity (as after drift): the worker refuses the result.
    event = ScoreEvent.objects.get(player_id="maya", points=5)
    season_board = BoardRef(game.slug, event.season_id, "all").key
    codec = ScoreCodec(event.season.time_bits)
    boards_client().zadd(season_board, {"maya": codec.max_points * codec.time_span})
    drain()
    event.refresh_from_db()
    assert (event.status, event.reason) == ("rejected", "score_overflow")
    assert board_points(game, tournament) == {"maya": 10}
    assert attempts(game, "cup", "maya") == 1


@pytest.mark.parametrize("scoring", ["best", "sum", "latest"])
def test_after_flushall_a_rebuild_writes_the_period_board_exactly_from_the_ledger(scoring):
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring=scoring, max_attempts=3)
    now = timezone.now()
    play(game, key, "maya", 10, played_at=now - timedelta(seconds=30))
    play(game, key, "maya", 50, played_at=now - timedelta(seconds=20))
    play(game, key, "leo", 5)
    drain()
    expected = {**board_points(game, tournament), "ana": 7}
    play(game, key, "ana", 7)  # accepted, not applied yet
    boards_client().flushall()
    boards_rebuild(game=game, live_only=True)
    assert board_points(game, tournament) == expected
    outbox_restore(ScoreEvent.objects.all())  # every apply delivered again: none counts twice
    drain()
    assert board_points(game, tournament) == expected
    # The counters come back from the ledger too: maya has one attempt left.
    assert verdicts(play(game, key, "maya", 1)) == {"maya": "counted"}
    assert verdicts(play(game, key, "maya", 2)) == {"maya": "no_attempts_left"}
