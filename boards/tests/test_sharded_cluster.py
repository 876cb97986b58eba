"""The reads of a board split by player (boards/sharded.py) on a real Redis Cluster: six shards
whose hash tags spread them over three masters answer exactly what the same members in one sorted
set answer. (The service itself talks to one Redis still; this is the read side of issue 12.)"""

import random

import pytest
from redis.cluster import RedisCluster

from boards import keys
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
