"""Tournaments with the boards on a real Redis Cluster (REDIS_CLUSTER_URL): joins with exact
`max_entrants`, verdicts with exact `max_attempts` for a match whose tournaments' periods lie on
different nodes (competitions/entry.py decides them per node), the counted results applied to the
period boards, the boards rewritten from the ledger (`latest`, `sum` with `asc`, a revocation),
the reads (top, player, around: Django's path), the counters filled again from the ledger
after the cluster lost them, a hidden or deleted player, and a period's board and counters given
back by the rebuild after FLUSHALL and repaired by the reconciliation."""

from datetime import timedelta

import pytest
from django.utils import timezone
from redis.cluster import RedisCluster

from boards import selectors
from boards.slots import live_slots
from common.api_errors import ApiError
from common.redis import boards_client
from common.redis import client as plain_client
from competitions import keys
from competitions.models import TournamentEntrant
from competitions.services import entrant_join
from competitions.testing import without_version
from scoring.models import ScoreEvent
from scoring.moderation import results_revoke
from scoring.players import player_delete, player_update
from scoring.rebuild import boards_rebuild
from scoring.reconcile import boards_reconcile
from scoring.recovery import boards_recover_if_lost
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_tournament_results import attempts, board_points, cup, verdicts

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster_boards(redis_cluster, settings):
    """The boards on the session's cluster, emptied first; the plain Redis keeps the rest."""
    settings.REDIS_CLUSTER_URL = redis_cluster.url
    cluster = boards_client()
    assert isinstance(cluster, RedisCluster)
    cluster.flushall(target_nodes=RedisCluster.PRIMARIES)
    selectors.top_cache.clear()
    yield cluster
    selectors.top_cache.clear()


def node_of(cluster, game, slug, period=1):
    return cluster.get_node_from_key(keys.board_key(game, slug, period)).name


def apart(cluster, game, slug):
    """A tournament id whose first period lies on another node than `slug`'s."""
    for i in range(200):
        other = f"t{i}"
        if node_of(cluster, game, other) != node_of(cluster, game, slug):
            return other
    raise AssertionError("no tournament id on another node")


def join(tournament, player_id, now):
    try:
        return "entered" if entrant_join(tournament=tournament, player_id=player_id, now=now).entered else "in"
    except ApiError as refused:
        return refused.code


def play(game, key, results, tournaments, *, played_at=None):
    body = match_body(
        [{"player_id": p, "points": points, "display_name": p.title()} for p, points in results],
        played_at=played_at,
        tournaments=tournaments,
    )
    return submit_direct(game, key, body, now=timezone.now())


def test_joins_verdicts_applies_and_reads_on_a_cluster(cluster_boards, client):
    cluster = cluster_boards
    game = make_game()
    key = make_key(game)
    other = apart(cluster, game.slug, "cup")
    seats = cup(game, max_entrants=3, join_required=True, max_attempts=2)
    free = cup(game, slug=other, max_attempts=1)
    now = timezone.now()

    joined = [join(seats, p, now) for p in ["maya", "leo", "ana", "zed", "ivy"]]
    assert joined == ["entered", "entered", "entered", "tournament_full", "tournament_full"]
    assert TournamentEntrant.objects.filter(tournament=seats).count() == 3
    assert cluster.scard(keys.entrants_key(game.slug, "cup", 1)) == 3 + 1  # and the "filled" mark

    # One match names both tournaments: two groups, two nodes, one answer.
    first = play(game, key, [("maya", 10), ("zed", 40)], ["cup", other])
    assert verdicts(first, "cup") == {"maya": "counted", "zed": "not_entered"}
    assert verdicts(first, other) == {"maya": "counted", "zed": "counted"}
    second = play(game, key, [("maya", 30), ("leo", 20)], ["cup", other])
    assert verdicts(second, "cup") == {"maya": "counted", "leo": "counted"}
    assert verdicts(second, other) == {"maya": "no_attempts_left", "leo": "counted"}
    third = play(game, key, [("maya", 99)], ["cup", other])
    assert verdicts(third, "cup") == {"maya": "no_attempts_left"}
    assert attempts(game, "cup", "maya") == 2 and attempts(game, other, "maya") == 1
    drain()
    assert board_points(game, seats) == {"maya": 30, "leo": 20}
    assert board_points(game, free) == {"maya": 10, "zed": 40, "leo": 20}
    assert not plain_client().keys("*:t:*")  # every period key lives on the cluster

    base = f"/api/v1/games/{game.slug}/tournaments/cup"
    top = client.get(f"{base}/top")
    assert top.status_code == 200, top.content
    entries = top.json()["entries"]
    assert [(e["player_id"], e["display_name"], e["score"], e["rank"], e["attempts"]) for e in entries] == [
        ("maya", "Maya", 30, 1, 2),
        ("leo", "Leo", 20, 2, 1),
    ]
    leo = client.get(f"{base}/players/leo").json()
    assert (leo["display_name"], leo["score"], leo["rank"], leo["total"], leo["attempts"]) == ("Leo", 20, 2, 2, 1)
    ana = client.get(f"{base}/players/ana").json()
    assert (ana["score"], ana["rank"], ana["attempts"]) == (None, None, 0)
    around = client.get(f"{base}/players/leo/around?r=1").json()["entries"]
    assert [(e["player_id"], e["display_name"]) for e in around] == [("maya", "Maya"), ("leo", "Leo")]

    # The cluster loses the counters: they come back from the ledger, exact.
    cluster.delete(keys.entrants_key(game.slug, "cup", 1), keys.attempts_key(game.slug, "cup", 1))
    cluster.delete(keys.attempts_key(game.slug, other, 1))
    again = play(game, key, [("maya", 5), ("leo", 5), ("ivy", 5)], ["cup", other])
    assert verdicts(again, "cup") == {"maya": "no_attempts_left", "leo": "counted", "ivy": "not_entered"}
    assert verdicts(again, other) == {"maya": "no_attempts_left", "leo": "no_attempts_left", "ivy": "counted"}
    assert join(seats, "ivy", now) == "tournament_full"
    assert client.get(f"{base}/players/ana").json()["attempts"] == 0


@pytest.mark.parametrize(("scoring", "order"), [("latest", "desc"), ("sum", "asc")])
def test_rewritten_boards_and_a_revocation_on_a_cluster(cluster_boards, scoring, order):
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring=scoring, order=order, max_attempts=3)
    now = timezone.now()
    play(game, key, [("maya", 10)], ["cup"], played_at=now - timedelta(seconds=30))
    play(game, key, [("maya", 50), ("leo", 7)], ["cup"], played_at=now - timedelta(seconds=20))
    drain()
    expected = {"latest": {"maya": 50, "leo": 7}, "sum": {"maya": 60, "leo": 7}}[scoring]
    assert board_points(game, tournament) == expected
    last = ScoreEvent.objects.filter(player_id="maya").order_by("-id").first()
    results_revoke(event_ids=[last.id], reason="test")
    drain()
    assert board_points(game, tournament) == {"maya": 10, "leo": 7}
    assert attempts(game, "cup", "maya") == 1  # the attempt given back


def test_a_hidden_or_deleted_player_leaves_the_period_board_on_a_cluster(cluster_boards, client):
    game = make_game()
    key = make_key(game)
    tournament = cup(game, max_attempts=3)
    play(game, key, [("maya", 10), ("leo", 20), ("ana", 30)], ["cup"])
    drain()
    # The period's slot is one of the game's live slots: the hide reaches its copy of the hidden
    # players (the apply below skips ana there), and a rebuild's pause would too.
    assert keys.period_tag(game.slug, "cup", 1) in live_slots(game.slug)
    player_update(game=game, player_id="ana", hidden=True)
    play(game, key, [("ana", 40)], ["cup"])
    drain()
    assert board_points(game, tournament) == {"maya": 10, "leo": 20}
    base = f"/api/v1/games/{game.slug}/tournaments/cup"
    assert client.get(f"{base}/players/leo").json()["rank"] == 1
    assert client.get(f"{base}/players/ana").status_code == 404
    player_delete(game=game, player_id="leo")
    assert board_points(game, tournament) == {"maya": 10}
    player_update(game=game, player_id="ana", hidden=False)
    assert board_points(game, tournament) == {"maya": 10, "ana": 40}


def test_rebuild_and_reconciliation_of_a_period_on_a_cluster(cluster_boards):
    cluster = cluster_boards
    boards_recover_if_lost()  # the boards marker
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring="latest", max_attempts=3, max_entrants=5)
    play(game, key, [("maya", 10), ("leo", 20)], ["cup"])
    play(game, key, [("maya", 30), ("ana", 5)], ["cup"])
    entrant_join(tournament=tournament, player_id="ivy", now=timezone.now())
    drain()
    expected = period_state(cluster, game)
    assert set(expected[0]) == {"maya", "leo", "ana"} and expected[1]["maya"] == "2"

    cluster.flushall(target_nodes=RedisCluster.PRIMARIES)
    boards_rebuild(game=game)
    assert period_state(cluster, game) == expected
    boards_recover_if_lost()  # the marker went with the data: the recovery rebuilds again, the same
    assert period_state(cluster, game) == expected

    board_key = keys.board_key(game.slug, "cup", 1)
    cluster.zrem(board_key, "leo")
    cluster.zadd(board_key, {"ghost": 1})
    cluster.hset(keys.attempts_key(game.slug, "cup", 1), "maya", 1)
    cluster.srem(keys.entrants_key(game.slug, "cup", 1), "ivy")
    report = boards_reconcile(game=game)
    assert (report.periods, report.drift) == (1, 4), report
    assert period_state(cluster, game) == expected


def period_state(cluster, game):
    return (
        dict(cluster.zrange(keys.board_key(game.slug, "cup", 1), 0, -1, withscores=True)),
        without_version(cluster.hgetall(keys.attempts_key(game.slug, "cup", 1))),
        cluster.smembers(keys.entrants_key(game.slug, "cup", 1)),
    )
