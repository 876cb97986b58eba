"""Leagues with the boards on a real Redis Cluster (REDIS_CLUSTER_URL; docs/architecture.md,
"Leagues"): a period's assignment state under its own hash tag (one slot: one script decides a
batch's cohorts), each cohort's board under a tag of its own (a league's cohorts spread over the
nodes); concurrent first results fill every cohort exactly with the open cohorts' counters exact;
the cohort boards equal the ledger after the apply, a revocation, a hide and a deletion; after the
cluster lost everything the recovery gives back the state and the boards, the reconciliation repairs
drift, and new first results keep filling cohorts exactly."""

import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.utils import timezone
from redis.cluster import RedisCluster

from boards import selectors
from boards.slots import live_slots
from common.redis import boards_client
from common.redis import client as plain_client
from competitions import league_keys
from competitions.league_models import LeagueMember, LeaguePlayer
from competitions.testing import make_league
from scoring import services
from scoring.models import ScoreEvent
from scoring.moderation import results_revoke
from scoring.players import player_delete, player_update
from scoring.reconcile import boards_reconcile
from scoring.recovery import boards_recover_if_lost
from scoring.testing import cohort_boards_read, cohort_ledger, drain, make_game, make_key, match_body, submit_direct
from scoring.validation import validate_match

pytestmark = pytest.mark.django_db

PERIOD = 4  # make_league's hourly periods started three hours ago


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


def send(game, key, points):
    body = match_body([{"player_id": p, "points": n} for p, n in points.items()])
    outcome = submit_direct(game, key, body, now=timezone.now())
    assert outcome.http_status == 202
    return outcome


def seats(league):
    rows = LeagueMember.objects.filter(league=league, period=PERIOD)
    return {p: f"{d}:{n}" for p, d, n in rows.values_list("player_id", "division", "number")}


def state(cluster, game, league):
    return (
        cluster.hgetall(league_keys.members_key(game.slug, league.slug, PERIOD)),
        cluster.hgetall(league_keys.state_key(game.slug, league.slug, PERIOD)),
    )


def counters_exact(cluster, game, league, size):
    """Every cohort but a division's last full; the counters (each cohort's size, each division's
    open cohort and players) and the player map equal the stored seats."""
    stored = seats(league)
    sizes = Counter(stored.values())
    members, counters = state(cluster, game, league)
    assert members == stored
    for division in {s.split(":")[0] for s in sizes}:
        mine = sorted((int(s.split(":")[1]), n) for s, n in sizes.items() if s.split(":")[0] == division)
        assert [number for number, _ in mine] == list(range(1, len(mine) + 1))
        assert [n for _, n in mine[:-1]] == [size] * (len(mine) - 1)
        assert int(counters[f"o:{division}"]) == len(mine)
        assert int(counters[f"p:{division}"]) == sum(n for _, n in mine)
    assert {f: int(v) for f, v in counters.items() if f.startswith("c:")} == {f"c:{s}": n for s, n in sizes.items()}


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_results_fill_cohorts_exactly_and_the_boards_spread_over_the_nodes(cluster_boards):
    cluster = cluster_boards
    boards_recover_if_lost()
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=7)
    players = [f"p{i:03d}" for i in range(400)]
    LeaguePlayer.objects.bulk_create(
        [LeaguePlayer(league=league, player_id=p, division=1, period=3) for p in players[::4]]
    )

    def batch(start: int) -> None:
        try:
            now = timezone.now()
            matches = []
            for i in range(start, start + 40, 4):
                mid = uuid.uuid4()
                body = match_body([{"player_id": players[i + j], "points": i + j + 1} for j in range(4)])
                parsed, errors = validate_match(body, match_id=mid, max_points=10_000, now=now, max_future_s=60)
                matches.append((mid, parsed, errors))
            outcomes = services.matches_submit(game=game, key=key, matches=matches, now=now)
            assert {o.http_status for o in outcomes} == {202}
        finally:
            connection.close()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(batch, range(0, 400, 40)))
    counters_exact(cluster, game, league, 7)
    drain()
    boards = cohort_boards_read(league, PERIOD)
    assert sum(len(m) for m in boards.values()) == 400
    assert boards == cohort_ledger(league, PERIOD)
    nodes = {
        cluster.get_node_from_key(league_keys.cohort_board_key(game.slug, league.slug, PERIOD, d, n)).name
        for d, n in boards
    }
    assert len(nodes) > 1  # a tag per cohort: spread over the nodes
    slots = {cluster.keyslot(league_keys.state_key(game.slug, league.slug, PERIOD))}
    slots.add(cluster.keyslot(league_keys.members_key(game.slug, league.slug, PERIOD)))
    slots.add(cluster.keyslot(league_keys.holes_key(game.slug, league.slug, PERIOD)))
    assert len(slots) == 1  # the assignment state in one slot
    assert not plain_client().keys("*:l:*")  # every league key lives on the cluster


def test_a_revocation_a_hidden_and_a_deleted_player_on_a_cluster(cluster_boards):
    boards_recover_if_lost()
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=4)
    send(game, key, {"maya": 10, "leo": 20, "ana": 30, "ivy": 1})
    send(game, key, {"maya": 5})
    drain()
    # The cohort's slot is one of the game's live slots: a hide reaches its copy of the hidden
    # players (the apply below skips ana there), and a rebuild's pause would too.
    assert league_keys.cohort_tag(game.slug, league.slug, PERIOD, 0, 1) in live_slots(game.slug)
    results_revoke(event_ids=[ScoreEvent.objects.get(player_id="maya", points=10).id], reason="cheat")
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"maya": 5, "leo": 20, "ana": 30, "ivy": 1}}
    player_update(game=game, player_id="ana", hidden=True)
    send(game, key, {"ana": 40})
    drain()
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"maya": 5, "leo": 20, "ivy": 1}}
    player_delete(game=game, player_id="leo")
    player_update(game=game, player_id="ana", hidden=False)
    assert cohort_boards_read(league, PERIOD) == {(0, 1): {"maya": 5, "ana": 70, "ivy": 1}}
    assert cohort_boards_read(league, PERIOD) == cohort_ledger(league, PERIOD)


def test_recovery_and_reconciliation_of_a_league_period_on_a_cluster(cluster_boards):
    cluster = cluster_boards
    boards_recover_if_lost()
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=3)
    LeaguePlayer.objects.create(league=league, player_id="p1", division=2, period=3)
    send(game, key, {f"p{i}": i + 1 for i in range(8)})  # bronze 0:1 p0 p2 p3, 0:2 p4-p6, 0:3 p7; gold 2:1 p1
    drain()
    expected_state, expected_boards = state(cluster, game, league), cohort_boards_read(league, PERIOD)

    cluster.flushall(target_nodes=RedisCluster.PRIMARIES)
    assert boards_recover_if_lost() is not None
    assert state(cluster, game, league) == expected_state
    assert cohort_boards_read(league, PERIOD) == expected_boards == cohort_ledger(league, PERIOD)

    board = league_keys.cohort_board_key(game.slug, league.slug, PERIOD, 0, 2)
    cluster.zrem(board, "p4")
    cluster.zadd(board, {"ghost": 1})
    cluster.hdel(league_keys.members_key(game.slug, league.slug, PERIOD), "p7")
    report = boards_reconcile(game=game, sample=10)
    assert report.drift == 3, report
    assert state(cluster, game, league) == expected_state
    assert cohort_boards_read(league, PERIOD) == expected_boards

    send(game, key, {"n1": 1, "n2": 1, "n3": 1})  # bronze cohort 3's last two seats, then cohort 4
    assert {p: s for p, s in seats(league).items() if p.startswith("n")} == {"n1": "0:3", "n2": "0:3", "n3": "0:4"}
    counters_exact(cluster, game, league, 3)
    drain()
    assert cohort_boards_read(league, PERIOD) == cohort_ledger(league, PERIOD)
