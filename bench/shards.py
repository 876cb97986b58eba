#!/usr/bin/env python3
"""Boards split by player: what a read costs at S = 1, 3 and 6 shards on one Redis.

    DATABASE_URL=... .venv/bin/python bench/shards.py [--players 100000] [--reads 3000] [--shards 1,3,6]

For each S: a game with board_shards = S, its `all` board filled with --players players straight
into Redis (ZADD to the shard each player hashes to; scores with ties, as the encoded scores of
the service), then --reads reads of each kind through the read path the web uses for that
layout (boards/selectors.py: one Lua script at S = 1, the scatter-gather of boards/sharded.py
above), one at a time from this process: rank (a player's standing), top (n=100, uncached),
around (r=5). Prints per kind reads/s and p50/p99 in ms, and the board's bytes per member
(MEMORY USAGE of every shard, over the members). The Redis is the one REDIS_URL names; the games
stay in the database (bench-shards-*), their boards are removed from Redis afterwards.

With --cluster: no database. A local Redis Cluster (3 masters, 3 replicas, common/redis_cluster.py)
gets the board split S ways (hash tags spread the shards over the masters), and for each S the
scatter step of a rank read (one shard_counts.lua per shard, sent concurrently by ShardedBoard) is
timed --reads times next to single branches (one shard's call alone): the share of scatter steps
slower than one branch's p99 is printed beside 1 - 0.99^S, what independent branches predict,
without and with hedging (boards/scatter.py: a copy to a replica once a call passes the recent
p95), and a whole rank read (ShardedBoard.standing) one at a time: reads/s, p50, p99.

With --ingest EVENTS: the board writer's apply rate (events/s through boards/writer.py, batches of
2,000 results as the worker applies them) at each S, on REDIS_URL's Redis and on a local cluster.
"""

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django

django.setup()

from django.utils import timezone  # noqa: E402

from boards import keys  # noqa: E402
from boards.selectors import BoardView, board_around, board_player, board_top, board_view  # noqa: E402
from common.redis import client  # noqa: E402
from seasons.models import Game, Season  # noqa: E402
from seasons.services import game_create  # noqa: E402


def seed(game: Game, season: Season, players: int, rng: random.Random) -> None:
    redis = client()
    whole = keys.BoardRef(game.slug, season.id, "all")
    span = 2**season.time_bits
    pipe = redis.pipeline(transaction=False)
    names: dict[str, str] = {}
    for i in range(players):
        player = f"p{i:07d}"
        points = int(rng.paretovariate(1.2) * 10) if rng.random() < 0.9 else rng.randint(0, 50)
        reached = rng.randint(0, 3600 * 24 * 30) if rng.random() < 0.8 else 3600
        pipe.zadd(whole.for_player(player, season.board_shards).key, {player: points * span + (span - 1 - reached)})
        names[player] = f"Player {i}"
        if len(names) >= 5000:
            pipe.hset(keys.names_key(game.slug), mapping=names)  # type: ignore[arg-type]
            names = {}
            pipe.execute()
    if names:
        pipe.hset(keys.names_key(game.slug), mapping=names)  # type: ignore[arg-type]
    pipe.execute()


def timed(fn, count: int) -> tuple[float, float, float]:
    latencies = []
    started = time.perf_counter()
    for _ in range(count):
        t = time.perf_counter()
        fn()
        latencies.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - started
    latencies.sort()
    return count / elapsed, statistics.median(latencies) * 1000, latencies[int(len(latencies) * 0.99)] * 1000


def measure(view: BoardView, players: int, reads: int) -> str:
    pick = random.Random(2)

    def one_player() -> str:
        return f"p{pick.randrange(players):07d}"

    figures = {
        "rank": timed(lambda: board_player(view=view, player_id=one_player()), reads),
        "top": timed(lambda: board_top(view=view, n=100, cached=False), reads // 3),
        "around": timed(lambda: board_around(view=view, player_id=one_player(), r=5), reads),
    }
    return ", ".join(f"{k} {rps:.0f}/s p50 {p50:.2f} ms p99 {p99:.2f} ms" for k, (rps, p50, p99) in figures.items())


def cluster_tail(players: int, reads: int, shard_counts: list[int]) -> None:
    """--cluster: the scatter step's tail against one branch's p99 (see the module docstring)."""
    import tempfile

    from redis.cluster import RedisCluster

    from boards.sharded import COUNTS_SCRIPT, ShardedBoard
    from common.redis_cluster import LocalCluster

    span = 2**20
    rng = random.Random(1)
    members = {f"p{i:07d}": int(rng.paretovariate(1.2) * 10) * span + rng.randint(0, span - 1) for i in range(players)}
    with tempfile.TemporaryDirectory() as folder, LocalCluster(folder) as cluster:
        redis = RedisCluster.from_url(cluster.url, decode_responses=True)
        for shards in shard_counts:
            ref = keys.BoardRef(f"tail{shards}", 1, "all")
            pipe = redis.pipeline(transaction=False)
            for player, score in members.items():
                pipe.zadd(ref.for_player(player, shards).key, {player: score})
                if len(pipe.command_stack) >= 5000:
                    pipe.execute()
            pipe.execute()
            board = ShardedBoard(ref=ref, shards=shards, span=span, rule="competition", names_key="-", redis=redis)
            pick = random.Random(2)
            sample = [pick.choice(list(members)) for _ in range(200)]
            branch: list[float] = []
            for i in range(reads):
                player = sample[i % len(sample)]
                part = board.parts[i % shards]
                t = time.perf_counter()
                board.script(COUNTS_SCRIPT)(keys=[part.key], args=[span, 0, members[player], player])
                branch.append(time.perf_counter() - t)
            branch.sort()
            p99 = branch[int(len(branch) * 0.99)]
            print(
                f"cluster S={shards}: branch p50 {statistics.median(branch) * 1000:.2f} ms p99 {p99 * 1000:.2f} ms "
                f"(1 - 0.99^S = {100 * (1 - 0.99**shards):.1f}%)"
            )
            for hedge in (False, True):
                board.hedge = hedge
                scatter: list[float] = []
                for i in range(reads):
                    player = sample[i % len(sample)]
                    t = time.perf_counter()
                    board.counts([(player, members[player])])
                    scatter.append(time.perf_counter() - t)
                scatter.sort()
                slow = sum(1 for x in scatter if x > p99) / len(scatter)
                print(
                    f"  scatter{' hedged' if hedge else ''}: p50 {statistics.median(scatter) * 1000:.2f} ms "
                    f"p99 {scatter[int(len(scatter) * 0.99)] * 1000:.2f} ms; "
                    f"over a branch's p99 {100 * slow:.1f}%"
                )
            board.hedge = False
            rank_times: list[float] = []
            started = time.perf_counter()
            for i in range(reads):
                t = time.perf_counter()
                board.standing(sample[i % len(sample)], exact_ranks=10_000, buckets=100)
                rank_times.append(time.perf_counter() - t)
            elapsed = time.perf_counter() - started
            rank_times.sort()
            rank_p99 = rank_times[int(len(rank_times) * 0.99)]
            print(
                f"  rank read (standing, one client): {reads / elapsed:.0f} reads/s, "
                f"p50 {statistics.median(rank_times) * 1000:.2f} ms p99 {rank_p99 * 1000:.2f} ms"
            )
        redis.close()


def ingest_rate(events: int, players: int, shard_counts: list[int]) -> None:
    """--ingest: the board writer's apply (boards/writer.py events_apply, batches of 2,000 as the
    worker sends them, every board of a result: season, day, week, month, best; global and the
    result's region) at each S, on the Redis of REDIS_URL and on a local Redis Cluster."""
    import tempfile

    from django.test import override_settings

    from boards.writer import EventRow, events_apply
    from common.redis import boards_client
    from common.redis_cluster import LocalCluster

    now = timezone.now()
    with tempfile.TemporaryDirectory() as folder, LocalCluster(folder) as cluster:
        for where, url in (("one Redis", ""), ("cluster (3 masters)", cluster.url)):
            for shards in shard_counts:
                rng = random.Random(shards)
                slug = f"bench-ingest-{shards}-{time.time_ns() % 16**8:08x}"
                _, season = game_create(
                    slug=slug, name=slug, season_start=now.replace(microsecond=0), board_shards=shards
                )
                base = 10**12 + rng.randrange(10**9) * 1000
                rows = [
                    EventRow(
                        id=base + i,
                        season_id=season.id,
                        player_id=f"p{rng.randrange(players):07d}",
                        points=rng.randint(1, 100),
                        accepted_at=now,
                        day=now.date(),
                        region=rng.choice(["eu", "na"]),
                    )
                    for i in range(events)
                ]
                with override_settings(REDIS_CLUSTER_URL=url):
                    started = time.perf_counter()
                    for start in range(0, events, 2000):
                        report = events_apply(events=rows[start : start + 2000], dedup_ttl_s=3600)
                        assert report.applied == len(rows[start : start + 2000]), report
                    elapsed = time.perf_counter() - started
                    redis = boards_client()
                    found = list(redis.scan_iter(match=keys.board_pattern(slug), count=1000))
                    for key in found:
                        redis.unlink(key)
                    if not url:
                        redis.unlink(*(keys.dedup_location(base + i)[0] for i in range(0, events, 128)))
                print(f"ingest on {where}, S={shards}: {events / elapsed:.0f} events/s ({events} events, one process)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=3000)
    parser.add_argument("--shards", default="1,3,6")
    parser.add_argument("--cluster", action="store_true", help="the scatter tail on a local Redis Cluster")
    parser.add_argument("--ingest", type=int, metavar="EVENTS", help="the writer's apply rate, one Redis and a cluster")
    args = parser.parse_args()
    if args.ingest:
        ingest_rate(args.ingest, args.players, [int(s) for s in args.shards.split(",")])
        return
    if args.cluster:
        cluster_tail(args.players, args.reads, [int(s) for s in args.shards.split(",")])
        return
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.players} players", file=sys.stderr)
    redis = client()
    for shards in [int(s) for s in args.shards.split(",")]:
        rng = random.Random(1)
        slug = f"bench-shards-{shards}-{time.time_ns() % 16**8:08x}"
        game, season = game_create(
            slug=slug, name=slug, season_start=timezone.now().replace(microsecond=0), board_shards=shards
        )
        try:
            seed(game, season, args.players, rng)
            whole = keys.BoardRef(game.slug, season.id, "all")
            memory = sum(int(redis.memory_usage(ref.key) or 0) for ref in whole.shards(shards))
            view = board_view(slug=slug, board="all", region=None, season=None, period=None, now=timezone.now())
            parts = measure(view, args.players, args.reads)
            print(f"S={shards}: {parts}, {memory / args.players:.1f} B/member")
        finally:
            for ref in keys.BoardRef(game.slug, season.id, "all").shards(shards):
                redis.unlink(ref.key, ref.version_key, ref.distinct_key)
            redis.unlink(keys.names_key(slug))


if __name__ == "__main__":
    main()
