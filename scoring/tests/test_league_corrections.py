"""League cohorts corrected and rebuilt from the ledger (docs/api.md, "Leagues"; docs/architecture.md,
"Leagues"): a revoked result leaves its cohort board as if it had never counted, an approved held
result is seated and counts, a hidden or deleted player's entries are rewritten; after FLUSHALL the
rebuild gives back the period's assignment state and cohort boards exactly, and new first results
keep filling cohorts exactly; the reconciliation finds and repairs a state and a board that drifted."""

import pytest
from django.utils import timezone

from anticheat.services import game_rules_set
from common.redis import boards_client
from competitions import league_keys
from competitions.league_models import LeagueMember
from competitions.testing import make_league
from scoring.models import LeagueResult, ScoreEvent
from scoring.moderation import results_approve, results_revoke
from scoring.players import player_delete, player_update
from scoring.reconcile import boards_reconcile
from scoring.recovery import boards_recover_if_lost
from scoring.testing import (
    cohort_boards_read,
    cohort_ledger,
    drain,
    make_game,
    make_key,
    match_body,
    submit_direct,
    unapplied,
)

pytestmark = pytest.mark.django_db

PERIOD = 4  # make_league's hourly periods started three hours ago


@pytest.fixture(autouse=True)
def boards_marker():
    """The boards marker, as the beat writes it at the first start (the reconciliation skips a
    Redis without it)."""
    boards_recover_if_lost()


def send(game, key, points, *, now=None):
    body = match_body([{"player_id": p, "points": n} for p, n in points.items()], played_at=now)
    outcome = submit_direct(game, key, body, now=now or timezone.now())
    assert outcome.http_status == 202
    return outcome


def seats(league):
    """{player: (division, number)} of the period, from the stored seats."""
    rows = LeagueMember.objects.filter(league=league, period=PERIOD)
    return {p: (d, n) for p, d, n in rows.values_list("player_id", "division", "number")}


def state(game, league):
    """The period's assignment state in Redis: the player map and the counters."""
    redis = boards_client()
    return (
        redis.hgetall(league_keys.members_key(game.slug, league.slug, PERIOD)),
        redis.hgetall(league_keys.state_key(game.slug, league.slug, PERIOD)),
    )


def test_a_revoked_result_leaves_the_cohort_board_as_if_it_had_never_counted():
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=3)
    send(game, key, {"amy": 10, "bob": 20, "cid": 5})
    send(game, key, {"amy": 7, "dan": 4})
    drain()
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"amy": 17, "bob": 20, "cid": 5}, (0, 2): {"dan": 4}}
    amy_first = ScoreEvent.objects.get(player_id="amy", points=10)
    results_revoke(event_ids=[amy_first.id, ScoreEvent.objects.get(player_id="dan").id], reason="cheat")
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"amy": 7, "bob": 20, "cid": 5}}
    assert cohort_boards_read(league, PERIOD) == cohort_ledger(league, PERIOD)
    assert seats(league)["dan"] == (0, 2)  # the seat stays: a cohort never shrinks
    drain()  # nothing queued brings the revoked result back
    send(game, key, {"amy": 1})
    drain()
    assert cohort_boards_read(league, PERIOD)[(0, 1)]["amy"] == 8
    assert boards_reconcile(game=game, full=True).drift == 0


def test_an_approved_held_result_is_seated_as_a_first_result_and_counts():
    game = make_game()
    game_rules_set(game=game, max_points_per_minute=10)  # above 90 points in 540 s: held for review
    key = make_key(game)
    league = make_league(game, cohort_size=2)
    send(game, key, {"bob": 5, "amy": 1000, "cid": 3, "eve": 7})  # amy held: bob, cid in 1; eve in 2
    send(game, key, {"eve": 500})  # held too; eve has her seat
    held = {e.player_id: e for e in ScoreEvent.objects.filter(status="pending_review")}
    assert set(held) == {"amy", "eve"}
    assert not LeagueResult.objects.filter(event__in=held.values()).exists()  # a held result seats nobody
    drain()
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"bob": 5, "cid": 3}, (0, 2): {"eve": 7}}
    results_approve(event_ids=[held["amy"].id, held["eve"].id], reason="verified")
    assert seats(league) == {"bob": (0, 1), "cid": (0, 1), "eve": (0, 2), "amy": (0, 2)}
    drain()
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"bob": 5, "cid": 3}, (0, 2): {"eve": 507, "amy": 1000}}
    assert cohort_boards_read(league, PERIOD) == cohort_ledger(league, PERIOD)
    send(game, key, {"dan": 1})  # cohort 2 is full: the approval's seat was counted
    assert seats(league)["dan"] == (0, 3)


def test_hiding_showing_and_deleting_a_player_rewrite_their_cohort_board():
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=3)
    send(game, key, {"amy": 10, "bob": 20, "cid": 5})
    drain()
    player_update(game=game, player_id="bob", hidden=True)
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"amy": 10, "cid": 5}}
    send(game, key, {"bob": 3})
    drain()
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"amy": 10, "cid": 5}}  # still off while hidden
    player_update(game=game, player_id="bob", hidden=False)
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"amy": 10, "bob": 23, "cid": 5}}
    player_delete(game=game, player_id="amy")
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"bob": 23, "cid": 5}}
    assert cohort_boards_read(league, PERIOD) == cohort_ledger(league, PERIOD)


def test_after_flushall_the_rebuild_gives_back_the_state_and_boards_and_cohorts_keep_filling_exactly():
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=3)
    send(game, key, {f"p{i}": i + 1 for i in range(7)})  # 1:1-3, 1:4-6, 1:7 (cohort 3 open, 1 seat)
    send(game, key, {"p0": 5, "p6": 5})
    drain()
    before_boards, before_state = cohort_boards_read(league, PERIOD), state(game, league)
    send(game, key, {"p1": 2})  # not applied before the flush
    boards_client().flushall()
    recovered = boards_recover_if_lost()  # the beat's check: the marker is gone, every game rebuilt
    assert recovered is not None and recovered.games == ["arena"]
    assert not unapplied().exists()  # the rebuilt boards hold p1's result
    assert state(game, league) == before_state
    before_boards[(0, 1)]["p1"] += 2
    assert cohort_boards_read(league, PERIOD) == before_boards == cohort_ledger(league, PERIOD)
    assert drain() == 0
    send(game, key, {"n1": 1, "n2": 1, "n3": 1})  # cohort 3's last two seats, then cohort 4
    drain()
    assert {p: s for p, s in seats(league).items() if p.startswith("n")} == {
        "n1": (0, 3),
        "n2": (0, 3),
        "n3": (0, 4),
    }
    assert cohort_boards_read(league, PERIOD) == cohort_ledger(league, PERIOD)
    assert boards_reconcile(game=game, full=True).drift == 0


def test_the_reconciliation_repairs_a_state_behind_the_seats_and_a_drifted_cohort_board():
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=3)
    send(game, key, {f"p{i}": i + 1 for i in range(5)})
    drain()
    redis = boards_client()
    map_key = league_keys.members_key(game.slug, league.slug, PERIOD)
    state_key = league_keys.state_key(game.slug, league.slug, PERIOD)
    expected = state(game, league)
    redis.hdel(map_key, "p4")  # a seat lost
    redis.hset(state_key, "c:0:2", 1)  # a counter behind
    board = league_keys.cohort_board_key(game.slug, league.slug, PERIOD, 0, 1)
    redis.zrem(board, "p0")
    redis.zadd(board, {"ghost": 123})
    report = boards_reconcile(game=game, sample=10, repair=False)
    assert report.drift == 4, report.examples  # the seat, the counter, the missing entry, the ghost
    report = boards_reconcile(game=game, sample=10)
    assert report.repaired == 2
    assert state(game, league) == expected
    assert cohort_boards_read(league, PERIOD) == cohort_ledger(league, PERIOD)
    assert boards_reconcile(game=game, sample=10).drift == 0
    send(game, key, {"n1": 1, "n2": 1})  # cohort 2's last seat, then cohort 3
    assert seats(league)["n1"] == (0, 2)
    assert seats(league)["n2"] == (0, 3)
