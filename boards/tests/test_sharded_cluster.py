"""The reads of a board split by player (boards/sharded.py) on a real Redis Cluster: six shards
whose hash tags spread them over three masters answer exactly what the same members in one sorted
set answer, with and without hedged branches (boards/scatter.py). The service on a cluster:
scoring/tests/test_cluster_service.py."""

import random
import time

import pytest
import redis as redis_lib
from redis.cluster import RedisCluster

from boards import keys, scatter
from boards.keys import BoardRef
from boards.sharded import ShardedBoard
from common.redis import client

SPAN = 2**20


def fill(redis, ref: BoardRef, shards: int, members: dict[str, int], names: dict[str, str]) -> None:
    pipe = redis.pipeline(transaction=False)
    for player, score in members.items():
        part = ref.for_player(player, shards)
        pipe.zadd(part.key, {player: score})
        pipe.zadd(part.distinct_key, {str(score // SPAN): score // SPAN})
    pipe.execute()
    redis.hset(keys.names_key(ref.game), mapping=names)


@pytest.mark.parametrize("rule", ["competition", "dense", "first"])
def test_six_shards_on_three_masters_read_as_one_set(redis_cluster, rule):
    cluster = RedisCluster.from_url(redis_cluster.url, decode_responses=True)
    plain = client()
    rng = random.Random(len(rule))
    game = f"clu-{rule}"
    members = {
        f"p{i:04d}": rng.choice([0, 5, 5, 10, rng.randint(0, 400)]) * SPAN
        + rng.choice([1, 2, rng.randint(0, SPAN - 1)])
        for i in range(3000)
    }
    names = {p: f"Player {p}" for p in list(members)[::7]}
    ref = BoardRef(game, 1, "all")
    fill(cluster, ref, 6, members, names)
    fill(plain, ref, 1, members, names)
    masters = {cluster.get_node_from_key(part.key).name for part in ref.shards(6)}
    assert len(masters) >= 2, masters  # the hash tags spread the shards over the masters

    split = ShardedBoard(ref=ref, shards=6, span=SPAN, rule=rule, names_key=keys.names_key(game), redis=cluster)
    whole = ShardedBoard(ref=ref, shards=1, span=SPAN, rule=rule, names_key=keys.names_key(game), redis=plain)
    for n in (1, 10, 100, 1000):
        assert split.top(n) == whole.top(n)
    sample = [*rng.sample(list(members), 60), "nobody"]
    for player in sample:
        assert split.standing(player, exact_ranks=10_000, buckets=100) == whole.standing(
            player, exact_ranks=10_000, buckets=100
        )
        for r in (0, 3):
            assert split.around(player, r) == whole.around(player, r)
    assert split.friends(sample) == whole.friends(sample)
    assert split.distribution(100) == whole.distribution(100)
    assert split.names(sample[:5]) == whole.names(sample[:5])
    cluster.close()


def _script_calls(cluster_nodes, role: str) -> int:
    total = 0
    for node in cluster_nodes:
        if node.role == role:
            stats = redis_lib.Redis(port=node.port).info("commandstats")
            total += sum(int(stats.get(f"cmdstat_{n}", {}).get("calls", 0)) for n in ("evalsha_ro", "eval_ro"))
    return total


def test_hedged_branches_answer_the_same(redis_cluster, monkeypatch):
    """Every branch hedged at once (a p95 of 0): the copies go to the replicas, the first answer of
    each branch wins, the connections whose answers were never read are not reused, and every read
    still equals one sorted set's."""
    cluster = RedisCluster.from_url(redis_cluster.url, decode_responses=True)
    plain = client()
    rng = random.Random(9)
    game = "clu-hedge"
    members = {f"h{i:04d}": rng.randint(0, 300) * SPAN + rng.randint(0, SPAN - 1) for i in range(2000)}
    ref = BoardRef(game, 1, "all")
    fill(cluster, ref, 6, members, {"h0000": "Hedge"})
    fill(plain, ref, 1, members, {"h0000": "Hedge"})
    split = ShardedBoard(
        ref=ref, shards=6, span=SPAN, rule="competition", names_key=keys.names_key(game), redis=cluster
    )
    whole = ShardedBoard(ref=ref, shards=1, span=SPAN, rule="competition", names_key=keys.names_key(game), redis=plain)
    assert split.top(50) == whole.top(50)  # the scripts loaded (NOSCRIPT takes the ordinary path once)
    deadline = time.monotonic() + 10
    while not redis_cluster.is_ok() and time.monotonic() < deadline:
        time.sleep(0.05)
    for node in redis_cluster.nodes:  # every replica has the members before a copy goes to it
        if node.role != "replica":
            assert redis_lib.Redis(port=node.port).wait(1, 10_000) >= 1, node.port
    # The client's map of the slots, read again now that every replica is in it (made before, it
    # may know the masters only, and a hedge then has nowhere to go).
    deadline = time.monotonic() + 10
    while True:
        cluster.nodes_manager.initialize()
        if all(len(cluster.nodes_manager.slots_cache[slot]) == 2 for slot in (0, 8000, 16383)):
            break
        assert time.monotonic() < deadline, "the replicas never showed in the slots"
        time.sleep(0.1)
    split.hedge = True
    monkeypatch.setattr(scatter.BranchLatency, "FLOOR_S", 0.0)
    monkeypatch.setattr(scatter.BranchLatency, "EVERY", 10**9)  # the p95 stays 0: every call hedged
    monkeypatch.setattr(scatter.LATENCY, "p95", 0.0)
    on_replicas = _script_calls(redis_cluster.nodes, "replica")
    for player in rng.sample(list(members), 40):
        assert split.standing(player, exact_ranks=10_000, buckets=100) == whole.standing(
            player, exact_ranks=10_000, buckets=100
        )
        assert split.around(player, 2) == whole.around(player, 2)
    assert split.top(100) == whole.top(100)
    assert _script_calls(redis_cluster.nodes, "replica") > on_replicas  # copies went to the replicas
    cluster.close()
