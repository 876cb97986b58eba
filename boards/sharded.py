"""Reads of a board split by player across S sorted sets (a season with board_shards > 1).

Every answer equals the one a single sorted set would give (the equivalence test in
tests/test_sharded_boards.py holds them to it):
- top n: each shard's top n in display order, merged; ranks follow from the merged list (every
  entry above an entry of the top n is in it);
- a player's rank: 1 + what the tie rule counts above it (boards/ranking.py): the sum of each
  shard's count of players with more points (competition) or of entries ahead in display order
  (`first`); for dense, the distinct points above across the shards' companions (a union, not a
  sum);
- around: the player's position from those counts, then each shard's entries nearest to it,
  merged; the window slides at the edges as on one set;
- friends, several players (players?ids=): the members' scores from their shards (one ZMSCORE per
  shard), board ranks as above (one shard_counts.lua per shard for all of them);
- the rank of a score: each shard's count of what the rule counts above it (score_rank.lua),
  summed; dense, the union of the companions above;
- a player on several boards (the player read, a player's boards): the scores and name in one
  pipeline, every board's shard counts in one more (`standings_of`);
- distribution: the equi-depth histogram's bounds found by bisection on points (each step one
  pipeline of ZCOUNTs), so the buckets are those of the whole board; a percentile below the exact
  ranks adds up each shard's histogram bucket (`below` and `own`: the error bound).

Each read is one pipelined round trip per step (two or three steps), and the shards' keys carry a
Redis Cluster hash tag (boards/keys.py), so the same calls spread over a cluster's nodes. The Lua
(shard_*.lua) is one shard's part of each read.
"""

import functools
import time
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from prometheus_client import Histogram
from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError

from common.redis import boards_read_client, client, lua_path, lua_script, lua_source

from . import keys
from .keys import BoardRef
from .ranking import Above, Ranker, Scored, counted_above, display_order, ranks_for, ranks_from, tie_rule
from .scatter import scatter

SHARD_SECONDS = Histogram(
    "leaderboard_board_shard_seconds",
    "On a Redis Cluster, one shard's script of a board read or of an apply (its round trip to the "
    "shard's node), by game, shard (- for a season not split) and op (read, apply).",
    ["game", "shard", "op"],
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)


def shard_observe(key: str, op: str, seconds: float) -> None:
    """One shard's script time, under the labels of the board `key` belongs to."""
    ref = BoardRef.from_key(key)
    SHARD_SECONDS.labels(ref.game, "-" if ref.shard is None else str(ref.shard), op).observe(seconds)


SLICE_SCRIPT = lua_path(__file__, "ranking_lib.lua", "shard_slice.lua")
COUNTS_SCRIPT = lua_path(__file__, "ranking_lib.lua", "shard_counts.lua")
NEAR_SCRIPT = lua_path(__file__, "ranking_lib.lua", "shard_near.lua")
SCORE_RANK_SCRIPT = lua_path(__file__, "ranking_lib.lua", "score_rank.lua")


class ShardedBoard:
    """One board of a split season: its shards' keys and the calls that read them."""

    def __init__(self, *, ref: BoardRef, shards: int, span: int, rule: str, names_key: str, redis: Any = None) -> None:
        """`redis`: the client to read with (default the service's, common.redis.client); every call
        is single-key or a pipeline of them, so a Redis Cluster client (RedisCluster) works too."""
        self.redis = redis if redis is not None else client()
        self.ref = ref.whole
        self.parts = self.ref.shards(shards)
        self.shards = shards
        self.span = span
        self.rule = tie_rule(rule)
        self.above = counted_above(self.rule)
        self.names_key = names_key
        # On a cluster, a branch slower than the recent p95 gets a copy on another node of its slot
        # (boards/scatter.py): a read that may be as stale as a replica's lag.
        self.hedge = bool(settings.REDIS_CLUSTER_HEDGE_READS)

    def script(self, path: str) -> Any:
        if self.redis is client():
            return lua_script(path)
        return _scripts_of(self.redis, path)

    def scripts(self, calls: Sequence[tuple[str, str, list[Any]]]) -> list[Any]:
        """Run one-key scripts (path, key, ARGV), replies in order: in one pipeline on one Redis; on
        a Redis Cluster, whose client does not pipeline scripts, written to each key's node at once
        and gathered as they answer (boards/scatter.py)."""
        if isinstance(self.redis, RedisCluster):
            if len(calls) == 1:  # a board of one set
                return [self._cluster_call(*calls[0])]
            return scatter(
                self.redis,
                [(self.script(path), [key], args) for path, key, args in calls],
                hedge=self.hedge,
                fallback=lambda index: self._cluster_call(*calls[index]),
                observe=lambda index, seconds: shard_observe(calls[index][1], "read", seconds),
            )
        pipe = self.redis.pipeline(transaction=False)
        for path, key, args in calls:
            self.script(path)(keys=[key], args=args, client=pipe)
        return list(pipe.execute())

    def _cluster_call(self, path: str, key: str, args: list[Any]) -> Any:
        """One script on a cluster: on the key's master, or with a client that reads from replicas
        (common.redis.boards_read_client) as EVALSHA_RO on one of the slot's replicas, chosen by
        the client's own slot map and balancer. (redis-py would ask the server for the keys of an
        EVALSHA_RO, a round trip more, so the node is named here.) A replica that has not seen the
        script yet (SCRIPT LOAD is not replicated) gets it once with EVAL_RO."""
        script = self.script(path)
        cluster: RedisCluster = self.redis  # type: ignore[assignment]  # scripts() checked it
        strategy = cluster.load_balancing_strategy
        started = time.perf_counter()
        if strategy is None:
            reply = script(keys=[key], args=args)
        else:
            node = cluster.nodes_manager.get_node_from_slot(cluster.keyslot(key), load_balancing_strategy=strategy)
            try:
                reply = cluster.execute_command("EVALSHA_RO", script.sha, 1, key, *args, target_nodes=node)
            except NoScriptError:
                reply = cluster.execute_command("EVAL_RO", script.script, 1, key, *args, target_nodes=node)
        shard_observe(key, "read", time.perf_counter() - started)
        return reply

    def points(self, score: int) -> int:
        return score // self.span

    def shard_key(self, player_id: str) -> str:
        return self.ref.for_player(player_id, self.shards).key

    # ------------------------------------------------------------------ versions (cached answers)
    def version(self, *, names_version_key: str | None = None) -> str:
        """The board's version: every shard's, then the game's names version when given."""
        pipe = self.redis.pipeline(transaction=False)
        self.version_queue(pipe, names_version_key)
        return self.version_of(pipe.execute())

    def version_queue(self, pipe: Any, names_version_key: str | None) -> None:
        for part in self.parts:
            pipe.get(part.version_key)
        if names_version_key is not None:
            pipe.get(names_version_key)

    @staticmethod
    def version_of(replies: Sequence[Any]) -> str:
        return ".".join(str(v or "0") for v in replies)

    def total(self) -> int:
        """The board's members: its shards' sizes summed (one pipeline)."""
        pipe = self.redis.pipeline(transaction=False)
        for part in self.parts:
            pipe.zcard(part.key)
        return sum(int(size) for size in pipe.execute())

    # ------------------------------------------------------------------ top
    def top(self, n: int) -> tuple[int, list[tuple[str, int, int]]]:
        """(total, [(player, encoded score, rank)]) of the first n in display order."""
        total = 0
        merged: list[Scored] = []
        for reply in self.scripts([(SLICE_SCRIPT, part.key, [n]) for part in self.parts]):
            total += int(reply[0])
            merged += [(str(reply[i]), int(reply[i + 1])) for i in range(1, len(reply), 2)]
        ordered = display_order(merged)[:n]
        span = self.span
        ranks = ranks_for([score // span for _, score in ordered], self.rule)
        return total, [(p, s, r) for (p, s), r in zip(ordered, ranks, strict=True)]

    def _window_ranks(self, window: list[Scored], start: int) -> list[int]:
        """Ranks of consecutive entries of the display order, the first at 0-based position
        `start`: its rank counted on the board (it may tie with entries before the window), the
        others' following from it."""
        if not window:
            return []
        span = self.span
        first = start + 1 if self.above is Above.AHEAD else self.ranks(window[:1])[0]
        ranker = Ranker.resumed(self.rule, position=start, points=window[0][1] // span, rank=first)
        return [ranker.rank(score // span) for _, score in window]

    # ------------------------------------------------------------------ counts
    def score_of(self, player_id: str) -> int | None:
        found = self.redis.zscore(self.shard_key(player_id), player_id)
        return None if found is None else int(found)

    def counts(self, members: Sequence[Scored], buckets: int = 0) -> list[list[list[int]]]:
        """For each (player, score): each shard's {members, more points, higher score, same score
        and an id before, fewer points, histogram below, own} (shard_counts.lua: one call per
        shard for all of them)."""
        if not members:
            return []
        args: list[Any] = [self.span, buckets]
        for player, score in members:
            args += [score, player]
        calls = [(COUNTS_SCRIPT, part.key, args) for part in self.parts]
        replies = [[int(x) for x in reply] for reply in self.scripts(calls)]
        return [[reply[7 * i : 7 * i + 7] for reply in replies] for i in range(len(members))]

    def dense_above(self, points: Sequence[int]) -> dict[int, int]:
        """For each points value, how many distinct points values the board holds above it: the
        union of the shards' companions above it (values held on several shards count once)."""
        wanted = sorted(set(points))
        if not wanted:
            return {}
        pipe = self.redis.pipeline(transaction=False)
        for part in self.parts:
            pipe.zrangebyscore(part.distinct_key, f"({wanted[0]}", "+inf", withscores=True)
        values: set[int] = set()
        for reply in pipe.execute():
            values.update(int(score) for _, score in reply)
        ordered = sorted(values)
        found: dict[int, int] = {}
        for p in wanted:
            found[p] = sum(1 for v in ordered if v > p)
        return found

    def ranks(self, members: Sequence[Scored]) -> list[int]:
        """Each (player, score)'s rank on the whole board as if the player were on it."""
        if not members:
            return []
        if self.above is Above.DISTINCT_POINTS:
            span = self.span
            above = self.dense_above([s // span for _, s in members])
            return ranks_from(above[s // span] for _, s in members)
        return ranks_from(self._counted(self.counts(members)))

    def _counted(self, counts: Sequence[list[list[int]]]) -> list[int]:
        """What the rule counts above each member, from its shards' counts (`counts`), summed over
        the shards: entries ahead in display order (a higher score, or the same and an id before),
        or players with more points. Not for dense, whose count is a union (`dense_above`)."""
        if self.above is Above.AHEAD:
            return [sum(c[2] + c[3] for c in shards) for shards in counts]
        return [sum(c[1] for c in shards) for shards in counts]

    # ------------------------------------------------------------------ one player
    def standing(self, player_id: str, *, exact_ranks: int, buckets: int) -> list[Any] | None:
        """What player.lua answers for one set: [points, rank, total, lower, name, below, own]."""
        [found] = standings_of([self], player_id, exact_ranks=exact_ranks, buckets=buckets)
        return found

    def standing_from(self, score: int, counts: list[list[int]], rank: int | None, exact_ranks: int) -> list[Any]:
        """player.lua's reply but the name, for a player at `score`, from their shards' `counts`
        (shard_counts.lua) and, for dense, their `rank` (counted from the companions)."""
        total = sum(c[0] for c in counts)
        if rank is None:
            [rank] = ranks_from(self._counted([counts]))
        lower = sum(c[4] for c in counts)
        below, own = -1, -1
        if rank > exact_ranks and all(c[5] >= 0 for c in counts if c[0] > 0):
            below = sum(c[5] for c in counts if c[0] > 0)
            own = sum(c[6] for c in counts if c[0] > 0)
        return [self.points(score), rank, total, lower, below, own]

    def around(self, player_id: str, r: int) -> tuple[int, list[tuple[str, int, int]]] | None:
        """(total, [(player, score, rank)]) of the 2r+1 entries around a player; the window slides
        at either end instead of shrinking. None when the player is not on the board."""
        score = self.score_of(player_id)
        if score is None:
            return None
        width = 2 * r + 1
        replies = self.scripts(
            [(COUNTS_SCRIPT, part.key, [self.span, 0, score, player_id]) for part in self.parts]
            + [(NEAR_SCRIPT, part.key, [score, player_id, width]) for part in self.parts]
        )
        counts = [[int(x) for x in reply] for reply in replies[: self.shards]]
        total = sum(c[0] for c in counts)
        position = sum(c[2] + c[3] for c in counts)  # 0-based, in display order
        candidates: list[Scored] = [(player_id, score)]
        for reply in replies[self.shards :]:
            candidates += [(str(reply[i]), int(reply[i + 1])) for i in range(0, len(reply), 2)]
        ordered = display_order(candidates)
        mine = ordered.index((player_id, score))
        start = position - r
        if start + width > total:
            start = total - width
        start = max(start, 0)
        window = [e for j, e in enumerate(ordered) if start <= position + j - mine < start + width]
        ranks = self._window_ranks(window, start)
        return total, [(p, s, rank) for (p, s), rank in zip(window, ranks, strict=True)]

    def friends(self, members: Sequence[str]) -> list[tuple[str, int, int]]:
        """[(player, score, board rank)] of those of `members` on the board, in display order."""
        return self.members(members)

    def members(self, players: Sequence[str]) -> list[tuple[str, int, int]]:
        """[(player, score, board rank)] of those of `players` on the board, in display order: one
        ZMSCORE per shard holding some of them, then their ranks (one call per shard)."""
        by_shard: dict[str, list[str]] = {}
        for player in players:
            by_shard.setdefault(self.shard_key(player), []).append(player)
        pipe = self.redis.pipeline(transaction=False)
        for key, group in by_shard.items():
            pipe.zmscore(key, group)
        scored: list[Scored] = []
        for group, scores in zip(by_shard.values(), pipe.execute(), strict=True):
            scored += [(m, int(s)) for m, s in zip(group, scores, strict=True) if s is not None]
        found = display_order(scored)
        return [(p, s, rank) for (p, s), rank in zip(found, self.ranks(found), strict=True)]

    def score_rank(self, points: int, *, exact_ranks: int, buckets: int) -> list[int]:
        """What score_rank.lua answers for one set, for a score of `points` (stored): [rank, total,
        lower, below, own], from one call per shard (each shard's count of what the rule counts
        above, summed; for dense the union of the companions above, `dense_above`)."""
        rule = "competition" if self.above is Above.DISTINCT_POINTS else str(self.rule)
        args = [points, self.span, rule, 0, buckets]  # 0: every shard's histogram bucket
        replies = [[int(x) for x in r] for r in self.scripts([(SCORE_RANK_SCRIPT, p.key, args) for p in self.parts])]
        if self.above is Above.DISTINCT_POINTS:
            rank = 1 + self.dense_above([points])[points]
        else:
            rank = 1 + sum(r[0] - 1 for r in replies)
        total = sum(r[1] for r in replies)
        below, own = -1, -1
        if rank > exact_ranks and total > 0:
            below = sum(r[3] for r in replies if r[1] > 0)
            own = sum(r[4] for r in replies if r[1] > 0)
        return [rank, total, sum(r[2] for r in replies), below, own]

    def names(self, players: Sequence[str]) -> list[str | None]:
        if not players:
            return []
        return [None if name is None else str(name) for name in self.redis.hmget(self.names_key, list(players))]

    # ------------------------------------------------------------------ distribution
    def distribution(self, buckets: int) -> tuple[int, list[tuple[int, int, int]]]:
        """(total, [(low points, high points, players)]): the equi-depth histogram of the whole
        board, as distribution.lua computes it on one set. The lows are the points at ascending
        positions floor(i * total / count), each found by bisection on points over the shards'
        counts (all bounds at once: one pipeline per step)."""
        pipe = self.redis.pipeline(transaction=False)
        for part in self.parts:
            pipe.zcard(part.key)
            pipe.zrange(part.key, 0, 0, withscores=True)
            pipe.zrange(part.key, -1, -1, withscores=True)
        replies = pipe.execute()
        total = sum(int(replies[3 * i]) for i in range(self.shards))
        if total == 0:
            return 0, []
        lowest = min(self.points(int(r[0][1])) for r in replies[1::3] if r)
        highest = max(self.points(int(r[0][1])) for r in replies[2::3] if r)
        count = min(buckets, total)
        positions = [i * total // count for i in range(count)]
        # The points at ascending position q: the least v with (members with points <= v) > q.
        lo = [lowest] * count
        hi = [highest] * count
        while any(a < b for a, b in zip(lo, hi, strict=True)):
            middles = [(a + b) // 2 for a, b in zip(lo, hi, strict=True)]
            at_or_below = self._at_or_below(middles)
            for i, (q, middle) in enumerate(zip(positions, middles, strict=True)):
                if lo[i] >= hi[i]:
                    continue
                if at_or_below[i] > q:
                    hi[i] = middle
                else:
                    lo[i] = middle + 1
        lows: list[int] = []
        for low in lo:
            if not lows or lows[-1] != low:
                lows.append(low)
        bounds = [(low, (lows[i + 1] - 1) if i + 1 < len(lows) else highest) for i, low in enumerate(lows)]
        below_high = self._at_or_below([high for _, high in bounds])
        below_low = self._at_or_below([low - 1 for low, _ in bounds])
        return total, [(low, high, below_high[i] - below_low[i]) for i, (low, high) in enumerate(bounds)]

    def _at_or_below(self, points: Sequence[int]) -> list[int]:
        pipe = self.redis.pipeline(transaction=False)
        for p in points:
            for part in self.parts:
                pipe.zcount(part.key, "-inf", (p + 1) * self.span - 1)
        replies = pipe.execute()
        s = self.shards
        return [sum(int(x) for x in replies[i * s : (i + 1) * s]) for i in range(len(points))]


def standings_of(
    boards: Sequence[ShardedBoard], player_id: str, *, exact_ranks: int, buckets: int
) -> list[list[Any] | None]:
    """What player.lua answers for one set ([points, rank, total, lower, name, below, own], None
    when the player is not on it), for one player on several boards of one season and client (the
    player read; a player's boards): the player's scores and name in one pipeline, then every
    board's shard counts in one call per shard and board, sent together, and for dense the
    companions above the player's points in one more pipeline."""
    first = boards[0]
    pipe = first.redis.pipeline(transaction=False)
    for board in boards:
        pipe.zscore(board.shard_key(player_id), player_id)
    pipe.hget(first.names_key, player_id)
    *scores, name = pipe.execute()
    found = [(i, boards[i], int(score)) for i, score in enumerate(scores) if score is not None]
    calls = [
        (COUNTS_SCRIPT, part.key, [board.span, buckets, score, player_id])
        for _, board, score in found
        for part in board.parts
    ]
    replies = [[int(x) for x in reply] for reply in first.scripts(calls)] if calls else []
    dense = [(board, board.points(score)) for _, board, score in found if board.above is Above.DISTINCT_POINTS]
    dense_ranks = iter(_dense_ranks(first.redis, dense))
    answers: list[list[Any] | None] = [None] * len(boards)
    at = 0
    for i, board, score in found:
        counts = replies[at : at + board.shards]
        at += board.shards
        rank = next(dense_ranks) if board.above is Above.DISTINCT_POINTS else None
        points, rank, total, lower, below, own = board.standing_from(score, counts, rank, exact_ranks)
        answers[i] = [points, rank, total, lower, name, below, own]
    return answers


def _dense_ranks(redis: Any, wanted: Sequence[tuple[ShardedBoard, int]]) -> list[int]:
    """The dense rank of points p on each (board, p): 1 + the distinct points values above p in
    the union of its shards' companions; one pipeline for all."""
    if not wanted:
        return []
    pipe = redis.pipeline(transaction=False)
    for board, p in wanted:
        for part in board.parts:
            pipe.zrangebyscore(part.distinct_key, f"({p}", "+inf")
    replies = pipe.execute()
    ranks = []
    at = 0
    for board, _ in wanted:
        ranks.append(1 + len(set().union(*replies[at : at + board.shards])))
        at += board.shards
    return ranks


@functools.cache
def _scripts_of(redis: Any, path: str) -> Any:
    """A script registered on another client than the service's (a cluster's, in tests)."""
    return redis.register_script(lua_source(path))


def sharded(ref: BoardRef, *, shards: int, span: int, rule: str, game: str) -> ShardedBoard:
    names_key = keys.names_key(game)
    return ShardedBoard(ref=ref, shards=shards, span=span, rule=rule, names_key=names_key, redis=boards_read_client())
