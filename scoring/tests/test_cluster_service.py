"""The service with its boards on a real Redis Cluster (REDIS_CLUSTER_URL): the writes (applies,
redeliveries, revocations, reinstatements, a hidden player, names), the reads and a rebuild run on
redis-py's cluster client, and every read equals what a plain Redis rebuilt from the same ledger
answers. Games at S = 1 (one slot per season) and S = 3 (a slot per shard)."""

import random
from datetime import timedelta

import pytest
from django.utils import timezone
from redis.cluster import RedisCluster

from boards import keys, selectors
from boards.services import friendship_add
from common.redis import boards_client
from common.redis import client as plain_client
from scoring.models import ScoreEvent
from scoring.moderation import results_reinstate, results_revoke
from scoring.outbox import events_apply_by_id
from scoring.players import player_update
from scoring.rebuild import boards_rebuild
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_sharded_boards import feed, reads
from seasons.models import Game, Season

pytestmark = pytest.mark.django_db

SAMPLE = ["p000", "p001", "p150", "A", "Z", "a-1", "p239", "nobody", "x39", "y00", "y07", "z03", "hideme"]


@pytest.fixture
def cluster_boards(redis_cluster, settings):
    """The boards on the session's cluster, emptied first; the plain Redis keeps the rest."""
    settings.REDIS_CLUSTER_URL = redis_cluster.url
    cluster = boards_client()
    assert isinstance(cluster, RedisCluster)
    cluster.flushall(target_nodes=RedisCluster.PRIMARIES)
    _caches_clear()
    yield cluster
    _caches_clear()


def _caches_clear() -> None:
    selectors.top_cache.clear()
    selectors.distribution_cache.clear()


def _board_keys(redis, game: Game) -> set[str]:
    return {str(k) for k in redis.scan_iter(match=keys.board_pattern(game.slug), count=1000)}


@pytest.mark.parametrize("rule", ["competition", "dense"])
def test_the_service_on_a_cluster_answers_what_one_redis_rebuilt_from_the_ledger_answers(
    cluster_boards, settings, rule
):
    start = timezone.now() - timedelta(days=5)
    games = [
        make_game("cone", tie_rule=rule, start=start),
        make_game("cthree", tie_rule=rule, start=start, board_shards=3),
    ]
    for a, b in [("p000", "p001"), ("p000", "p150"), ("A", "Z"), ("y07", "y02"), ("hideme", "p000")]:
        for g in games:
            friendship_add(game=g, player_id=a, friend_id=b)
    for g in games:
        player_update(game=g, player_id="x00", display_name="Player One")  # never revoked below
    feed(games, results=300, seed=11 + len(rule))
    now = timezone.now()
    for g in games:  # a player who goes hidden: their results leave every board, later ones never land
        submit_direct(g, make_key(g), match_body([{"player_id": "hideme", "points": 999}]), now=now)
    drain()
    ids = list(ScoreEvent.objects.values_list("id", flat=True))
    random.Random(3).shuffle(ids)
    events_apply_by_id(event_ids=ids, dedup_ttl_s=3600)  # redeliveries count nothing twice
    for g in games:
        events = list(ScoreEvent.objects.filter(game=g).order_by("id").values_list("id", flat=True))
        results_revoke(event_ids=events[10:30], reason="test")
        results_reinstate(event_ids=events[12:16], reason="test")
        player_update(game=g, player_id="hideme", hidden=True)
        submit_direct(g, make_key(g), match_body([{"player_id": "hideme", "points": 5}]), now=timezone.now())
    drain()

    cluster = cluster_boards
    for g in games:
        season = Season.objects.get(game=g)
        on_cluster = _board_keys(cluster, g)
        assert on_cluster and not _board_keys(plain_client(), g)  # the boards live on the cluster only
        # Every key of one shard (or of the unsplit season) carries its slot's tag.
        whole = keys.BoardRef(g.slug, season.id, "all")
        slots = {part.slot for part in whole.shards(season.board_shards)}
        assert all(any(key.endswith(slot) or f"{slot}:" in key for slot in slots) for key in on_cluster)
        assert boards_diff(game=g, now=timezone.now()) == {}
    nodes = {
        cluster.get_node_from_key(part.key).name
        for part in keys.BoardRef("cthree", Season.objects.get(game=games[1]).id, "all").shards(3)
    }
    assert len(nodes) >= 2, nodes  # the shards spread over the masters

    on_cluster_reads = {g.slug: reads(g, SAMPLE) for g in games}
    assert on_cluster_reads["cone"] == on_cluster_reads["cthree"]
    top = on_cluster_reads["cone"]["all/None/None top 1000"]
    assert "hideme" not in {e["player_id"] for e in top}
    assert any(e["display_name"] == "Player One" for e in top)
    assert on_cluster_reads["cone"]["all/None/None player hideme"] is None

    # A rebuild on the cluster (staged copies, the pause in every slot, one MULTI per slot).
    boards_rebuild(game=games[1])
    assert boards_diff(game=games[1], now=timezone.now()) == {}
    _caches_clear()
    assert reads(games[1], SAMPLE) == on_cluster_reads["cthree"]

    # The same ledger rebuilt into the plain Redis answers the same.
    settings.REDIS_CLUSTER_URL = ""
    _caches_clear()
    for g in games:
        boards_rebuild(game=g)
        assert reads(g, SAMPLE) == on_cluster_reads[g.slug], g.slug


def test_board_reads_over_http_on_a_cluster(cluster_boards, client):
    game = make_game("chttp", start=timezone.now() - timedelta(days=1), board_shards=3)
    key = make_key(game)
    now = timezone.now()
    for i in range(30):
        submit_direct(game, key, match_body([{"player_id": f"h{i:02d}", "points": 10 * i}]), now=now)
    drain()
    top = client.get("/api/v1/games/chttp/boards/all/top?n=5")
    assert top.status_code == 200, top.content
    assert [e["player_id"] for e in top.json()["entries"]] == ["h29", "h28", "h27", "h26", "h25"]
    me = client.get("/api/v1/games/chttp/boards/all/players/h20")
    assert me.status_code == 200 and me.json()["rank"] == 10
    around = client.get("/api/v1/games/chttp/boards/all/players/h20/around?r=1")
    assert [e["player_id"] for e in around.json()["entries"]] == ["h21", "h20", "h19"]
    assert not _board_keys(plain_client(), game)
