"""A real Redis Cluster (common/redis_cluster.py) through redis-py's RedisCluster: keys with one hash
tag share a slot and the tags spread over the masters; a script's keys must share a slot; a master
SIGKILLed under a writing client is replaced by its replica within seconds, the writes go on, what
the surviving masters acknowledged is all there, and the dead node comes back as a replica."""

import contextlib
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException

from common.redis_cluster import LocalCluster, _main

Connect = Callable[[LocalCluster], RedisCluster]
TAGS = [f"{{g.1.{n}}}" for n in range(6)]

SCRIPT = """
redis.call('SET', KEYS[1], ARGV[1])
local total = redis.call('INCRBY', KEYS[2], ARGV[2])
redis.call('RPUSH', KEYS[3], ARGV[1])
return {redis.call('GET', KEYS[1]), total, redis.call('LLEN', KEYS[3])}
"""


@pytest.fixture
def connect() -> Iterator[Connect]:
    """`connect(cluster)`: a RedisCluster client (decoded replies), closed after the test."""
    made: list[RedisCluster] = []

    def make(cluster: LocalCluster) -> RedisCluster:
        client = RedisCluster.from_url(cluster.url, decode_responses=True, socket_timeout=2, socket_connect_timeout=1)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def test_hash_tags_share_a_slot_and_spread_over_the_masters(redis_cluster: LocalCluster, connect: Connect) -> None:
    client = connect(redis_cluster)
    keys = [f"{TAGS[i % len(TAGS)]}:k{i}" for i in range(1000)]
    pipe = client.pipeline(transaction=False)  # the cluster pipeline: one batch per node
    for i, key in enumerate(keys):
        pipe.set(key, i)
    assert pipe.execute() == [True] * 1000

    assert client.mget_nonatomic(keys) == [str(i) for i in range(1000)]
    for i, key in enumerate(keys):
        assert client.get(key) == str(i)

    owners = redis_cluster.slot_map()
    masters = {n.port for n in redis_cluster.nodes if n.role == "master"}
    tag_slots = {}
    for tag in TAGS:
        tagged = [k for k in keys if k.startswith(tag)]
        slots = {client.keyslot(k) for k in tagged}
        assert len(slots) == 1, tag
        [slot] = slots
        assert client.cluster_keyslot(tagged[0]) == slot  # the server agrees with the client's hashing
        tag_slots[tag] = slot
        # The keys are on the master serving that slot, every one of them.
        with redis.Redis(host="127.0.0.1", port=owners[slot], decode_responses=True) as master:
            assert master.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == len(tagged)
            assert master.get(tagged[0]) == str(keys.index(tagged[0]))
    assert len(set(tag_slots.values())) == len(TAGS)
    assert {owners[slot] for slot in tag_slots.values()} <= masters
    assert len({owners[slot] for slot in tag_slots.values()}) >= 2


def test_a_script_runs_when_its_keys_share_a_hash_tag(redis_cluster: LocalCluster, connect: Connect) -> None:
    client = connect(redis_cluster)
    script = client.register_script(SCRIPT)
    tag = TAGS[3]
    keys = [f"{tag}:script:name", f"{tag}:script:total", f"{tag}:script:log"]

    assert script(keys=keys, args=["ada", 5]) == ["ada", 5, 1]
    assert script(keys=keys, args=["bob", 7]) == ["bob", 12, 2]  # EVALSHA, the script cached
    assert client.lrange(keys[2], 0, -1) == ["ada", "bob"]

    # Without a shared tag the keys fall in different slots: the client refuses before sending.
    with pytest.raises(RedisClusterException):
        script(keys=["script:a", "script:b", "script:c"], args=["x", 1])


@dataclass
class _Writer:
    """SETs `w:<i>` = i in a loop on its own RedisCluster client, retrying a key until it is
    acknowledged; records when each write started and was acknowledged, and the errors."""

    client: RedisCluster
    stop: threading.Event = field(default_factory=threading.Event)
    acked: list[tuple[str, float, float]] = field(default_factory=list)  # key, started, acknowledged
    errors: list[tuple[float, str]] = field(default_factory=list)

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            key, started = f"w:{i}", time.monotonic()
            try:
                self.client.set(key, i)
            except (redis.RedisError, RedisClusterException) as error:
                self.errors.append((time.monotonic(), type(error).__name__))
                time.sleep(0.05)
                continue
            self.acked.append((key, started, time.monotonic()))
            i += 1


def _until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.serial
@pytest.mark.timeout(90)  # in the normal run; a stuck failover fails here, not after 300 s
def test_a_killed_master_fails_over_and_the_writes_go_on(
    redis_cluster_factory: Callable[..., LocalCluster], connect: Connect
) -> None:
    cluster: LocalCluster = redis_cluster_factory()
    owners = cluster.slot_map()
    writer = _Writer(connect(cluster))
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    try:
        assert _until(lambda: len(writer.acked) >= 300, 20), writer.errors[-5:]

        killed = cluster.kill_master(0)
        killed_at = time.monotonic()
        promoted = cluster.wait_failover(killed, timeout=15)
        failover_took = time.monotonic() - killed_at
        assert failover_took < 15
        assert promoted in [n.port for n in cluster.nodes if n.role == "master"]
        assert cluster.url != f"redis://127.0.0.1:{killed}"

        # The writes resume, the dead master's slots included (now the promoted replica's).
        def resumed_on_failed_slots() -> bool:
            return any(
                started > killed_at and owners[writer.client.keyslot(key)] == killed
                for key, started, _ in writer.acked[-200:]
            )

        assert _until(resumed_on_failed_slots, 10), writer.errors[-5:]
        acked_after = len([1 for _, started, _ in writer.acked if started > killed_at])
        assert _until(lambda: len([1 for _, s, _ in writer.acked if s > killed_at]) >= acked_after + 100, 10)
    finally:
        writer.stop.set()
        thread.join(timeout=10)
    assert writer.errors, "the client never noticed the dead master"
    assert min(t for t, _ in writer.errors) >= killed_at - 0.5

    # Everything the surviving masters acknowledged is there, before the kill and after; so is
    # every write sent after the kill (only a live node can have acknowledged it). Writes the dead
    # master acknowledged before its replica had them may be lost (replication is asynchronous).
    checker = connect(cluster)
    must_have = [
        key for key, started, _ in writer.acked if owners[checker.keyslot(key)] != killed or started > killed_at
    ]
    values = checker.mget_nonatomic(must_have)
    missing = [key for key, value in zip(must_have, values, strict=True) if value != key.split(":")[1]]
    assert not missing, f"{len(missing)} of {len(must_have)} acknowledged writes lost: {missing[:10]}"

    role = cluster.restart_node(killed)
    assert role == "replica"
    [back] = [n for n in cluster.nodes if n.port == killed]
    assert back.role == "replica" and back.master_port == promoted and back.pid is not None
    # It holds its master's data again (a full sync).
    with redis.Redis(host="127.0.0.1", port=promoted) as master, redis.Redis(host="127.0.0.1", port=killed) as replica:
        assert _until(lambda: replica.dbsize() == master.dbsize(), 5)
        assert master.dbsize() > 0


def _free_port_range(count: int) -> int:
    """A base port such that `count` ports from it, and their cluster bus ports (+10000), are free."""
    for _ in range(200):
        base = random.randrange(20000, 30000)
        with contextlib.ExitStack() as stack:
            try:
                for port in [*range(base, base + count), *range(base + 10000, base + 10000 + count)]:
                    stack.enter_context(socket.socket()).bind(("127.0.0.1", port))
            except OSError:
                continue
        return base
    raise AssertionError("no free port range")


def test_the_command_line_in_a_folder_where_nothing_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["status", "--dir", str(tmp_path)]) == 3
    assert _main(["stop", "--dir", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"cluster: not running ({tmp_path})\ncluster: nothing started under {tmp_path}\n"


def test_the_command_line_starts_reports_and_stops_a_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _free_port_range(3)
    workdir = str(tmp_path / "cluster")
    options = ["--dir", workdir, "--port-base", str(base), "--masters", "3", "--replicas", "0"]
    url = f"REDIS_CLUSTER_URL=redis://127.0.0.1:{base}\n"
    try:
        assert _main(["start", *options]) == 0
        captured = capsys.readouterr()
        assert captured.out == url
        assert captured.err == f"cluster: started 3 masters + 0 replicas ({workdir})\n"
        assert _main(["start", *options]) == 0
        captured = capsys.readouterr()
        assert (captured.out, captured.err) == (url, f"cluster: already running ({workdir})\n")
        assert _main(["status", "--dir", workdir]) == 0
        captured = capsys.readouterr()
        assert captured.out == url
        assert captured.err.splitlines()[-1] == "cluster: cluster_state: ok"
        assert sum(f"node {port}: master" in captured.err for port in range(base, base + 3)) == 3
    finally:
        assert _main(["stop", "--dir", workdir]) == 0
    assert capsys.readouterr().err == f"cluster: stopped (ports {base}-{base + 2})\n"
    assert _main(["status", "--dir", workdir]) == 3
