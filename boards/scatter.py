"""A scatter-gather on a Redis Cluster without a thread per branch, and with hedging.

A board split by player is read one script per shard (boards/sharded.py); on a cluster the shards
lie on several nodes. redis-py's cluster client will not pipeline scripts, and a thread per branch
costs more than a branch (measured: a rank read's scatter of 3 branches took p50 0.92 ms against
0.21-0.26 ms for one branch, so 60-100% of scatters took longer than one branch's p99). Here the
calls are grouped by the node the cluster client's own slot map names for their key, each node's
calls are written to one of its connections as a pipeline, and the replies are read as they
arrive: the nodes work at once, and the scatter takes about its slowest node.

Hedging (REDIS_CLUSTER_HEDGE_READS): calls still unanswered after the process's recent p95 of a
node's answer (`BranchLatency`) are sent again to another node of their slot (a replica when they
went to the master; the master when they went to a replica), and each call takes the first reply;
a connection whose replies were not all read is dropped, never pooled. A reply from a replica is as
old as its lag behind its master, so hedging is a stale read and off by default.

Anything unusual about a call (NOSCRIPT, a MOVED or ASK redirect while slots move, a connection
error) sends that call down redis-py's own path (the caller's `fallback`), which loads scripts,
follows redirects, refreshes its slot map and retries.
"""

import select
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.cluster import ClusterNode, RedisCluster
from redis.commands.core import Script
from redis.exceptions import ConnectionError, RedisError, ResponseError, TimeoutError

_PENDING = object()
_FAILED = object()


class BranchLatency:
    """The recent time of this process's nodes to answer a scatter's calls (the last WINDOW) and
    its p95, recomputed every EVERY answers: the hedge's trigger. FLOOR_S keeps a quiet process from
    hedging on microseconds; START_S serves until a window has been seen."""

    WINDOW = 1024
    EVERY = 64
    FLOOR_S = 0.0002
    START_S = 0.002

    def __init__(self) -> None:
        self._samples: deque[float] = deque(maxlen=self.WINDOW)
        self._lock = threading.Lock()
        self._count = 0
        self.p95 = self.START_S

    def add(self, seconds: float) -> None:
        with self._lock:
            self._samples.append(seconds)
            self._count += 1
            if self._count % self.EVERY == 0:
                ordered = sorted(self._samples)
                self.p95 = max(self.FLOOR_S, ordered[int(0.95 * (len(ordered) - 1))])


LATENCY = BranchLatency()


@dataclass
class _Wire:
    """One connection carrying calls to one node, their replies in order. `readonly_first`: a
    hedge's READONLY answers before its calls. A wire whose replies were not all read is dropped."""

    node: ClusterNode
    conn: Any
    at: float
    calls: list[int]
    hedge: bool = False
    readonly_first: bool = False
    read: int = 0
    dead: bool = False

    @property
    def done(self) -> bool:
        return self.dead or self.read == len(self.calls)


@dataclass
class _Gather:
    cluster: RedisCluster
    scripts: Sequence[tuple[Script, Sequence[str], Sequence[Any]]]
    command: str
    replies: list[Any]
    took: list[float]
    slots: list[int]
    wires: list[_Wire] = field(default_factory=list)
    hedged: set[int] = field(default_factory=set)

    def send(self, node: ClusterNode, calls: list[int], *, hedge: bool) -> None:
        """Write `calls` to one connection of `node` (a hedge's with READONLY first: the client may
        never read from that kind of node otherwise, so its connection may lack it)."""
        conn = node.redis_connection.connection_pool.get_connection()
        wire = _Wire(node, conn, time.perf_counter(), calls, hedge=hedge, readonly_first=hedge)
        self.wires.append(wire)
        commands: list[tuple[Any, ...]] = [("READONLY",)] if hedge else []
        for index in calls:
            script, script_keys, args = self.scripts[index]
            command = "EVALSHA_RO" if hedge else self.command
            commands.append((command, script.sha, len(script_keys), *script_keys, *args))
        try:
            conn.send_packed_command(conn.pack_commands(commands))
        except (ConnectionError, TimeoutError):
            wire.dead = True
            conn.disconnect()
            if not hedge:
                for index in calls:
                    self._settle(index, _FAILED, 0.0)

    def read(self, wire: _Wire) -> None:
        """Every reply of `wire` already on its way in."""
        while not wire.done:
            try:
                if not wire.conn.can_read(timeout=0):
                    return
                if wire.readonly_first:
                    wire.conn.read_response()
                    wire.readonly_first = False
                    continue
                index = wire.calls[wire.read]
                try:
                    reply = wire.conn.read_response()
                except ResponseError:  # NOSCRIPT, MOVED, ASK: this call only; the wire reads on
                    reply = _FAILED
                wire.read += 1
            except RedisError:  # the connection: its calls go the ordinary way (if no copy answers)
                wire.dead = True
                wire.conn.disconnect()
                if not wire.hedge:
                    for index in wire.calls[wire.read :]:
                        if index not in self.hedged:
                            self._settle(index, _FAILED, 0.0)
                return
            took = time.perf_counter() - wire.at
            if reply is _FAILED and wire.hedge:
                continue  # the original may still answer
            self._settle(index, reply, took)
            if not wire.hedge and reply is not _FAILED:
                LATENCY.add(took)

    def _settle(self, index: int, reply: Any, took: float) -> None:
        if self.replies[index] is _PENDING or (self.replies[index] is _FAILED and reply is not _FAILED):
            self.replies[index] = reply
            self.took[index] = took

    def pending(self) -> list[int]:
        return [i for i, reply in enumerate(self.replies) if reply is _PENDING]

    def hedge(self, now: float, trigger: float) -> None:
        """Copies of the calls still unanswered on wires older than `trigger`, to another node of
        each call's slot, one wire per node."""
        late: dict[str, tuple[ClusterNode, list[int]]] = {}
        for wire in self.wires:
            if wire.hedge or wire.done or now - wire.at < trigger:
                continue
            for index in wire.calls[wire.read :]:
                if self.replies[index] is not _PENDING or index in self.hedged:
                    continue
                other = _other_node(self.cluster, self.slots[index], wire.node)
                if other is not None:
                    late.setdefault(other.name, (other, []))[1].append(index)
                    self.hedged.add(index)
        for node, calls in late.values():
            self.send(node, calls, hedge=True)

    def wait(self, *, hedge: bool) -> None:
        """Read replies as they arrive until every call has one or no wire can bring more; with
        `hedge`, late calls are sent again (`hedge`) and the wait ends when the next one is due."""
        while self.pending():
            for wire in self.wires:
                self.read(wire)
            if not self.pending():
                break
            now = time.perf_counter()
            trigger = LATENCY.p95
            if hedge:
                self.hedge(now, trigger)
            live = [w for w in self.wires if not w.done]
            if not live:  # nothing more can answer: the rest go the ordinary way
                break
            wait = 0.05
            if hedge:
                unhedged = [w.at for w in live if not w.hedge and any(i not in self.hedged for i in w.calls[w.read :])]
                if unhedged:
                    wait = max(0.0, min(unhedged) + trigger - now)
            _readable_wait([w.conn._sock for w in live if w.conn._sock is not None], wait)

    def release(self) -> None:
        """Every wire's connection back to its pool; one with replies still on their way is
        disconnected first (never handed to another caller)."""
        for wire in self.wires:
            if not wire.done and not wire.dead:
                wire.conn.disconnect()
            wire.node.redis_connection.connection_pool.release(wire.conn)


def scatter(
    cluster: RedisCluster,
    calls: Sequence[tuple[Script, Sequence[str], Sequence[Any]]],
    *,
    hedge: bool,
    fallback: Callable[[int], Any],
    observe: Callable[[int, float], None],
) -> list[Any]:
    """The replies of scripts (script, KEYS, ARGV; a call's keys in one slot), in order. `fallback(i)`
    runs call i the ordinary way when it did not work out here; `observe(i, seconds)` times each
    call's answer. Without replica reads or hedging, the scripts may write (the board
    writer's applies go this way too)."""
    strategy = cluster.load_balancing_strategy
    slots = [cluster.keyslot(script_keys[0]) for _, script_keys, _ in calls]
    gather = _Gather(
        cluster,
        calls,
        "EVALSHA_RO" if strategy is not None else "EVALSHA",
        [_PENDING] * len(calls),
        [0.0] * len(calls),
        slots,
    )
    by_node: dict[str, tuple[ClusterNode, list[int]]] = {}
    for index, slot in enumerate(slots):
        node = cluster.nodes_manager.get_node_from_slot(slot, load_balancing_strategy=strategy)
        by_node.setdefault(node.name, (node, []))[1].append(index)
    try:
        for node, indexes in by_node.values():
            gather.send(node, indexes, hedge=False)
        gather.wait(hedge=hedge)
    finally:
        gather.release()
    return _replies_in_order(gather, fallback, observe)


def _replies_in_order(
    gather: _Gather, fallback: Callable[[int], Any], observe: Callable[[int, float], None]
) -> list[Any]:
    """Each call's reply, by `fallback` for those that got none here (or a failure); the others timed."""
    replies = []
    for index, reply in enumerate(gather.replies):
        if reply is _PENDING or reply is _FAILED:
            replies.append(fallback(index))
        else:
            replies.append(reply)
            observe(index, gather.took[index])
    return replies


def _readable_wait(socks: list[Any], timeout: float) -> None:
    """Wait until one of `socks` can be read, or `timeout` seconds. poll(), not select(): select()
    refuses a descriptor of 1,024 or more, which a busy process reaches."""
    poller = select.poll()
    for sock in socks:
        poller.register(sock, select.POLLIN)
    poller.poll(timeout * 1000)


def _other_node(cluster: RedisCluster, slot: int, used: ClusterNode) -> ClusterNode | None:
    """Another node serving `slot`: a replica if `used` is the master, else the master."""
    nodes = cluster.nodes_manager.slots_cache.get(slot) or []
    others = [n for n in nodes if n.name != used.name]
    return others[0] if others else None
