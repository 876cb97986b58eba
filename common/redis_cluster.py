"""A real Redis Cluster on loopback, for tests and local runs: `LocalCluster` starts N masters with R
replicas each as `redis-server` processes and joins them with `redis-cli --cluster create`.

Why real processes and not a mock: hash-tag placement, MOVED redirects, CROSSSLOT refusals, scripts
whose keys must share a slot and a replica's promotion after its master dies are behaviours of the
server and of redis-py's cluster client together; only a cluster of real nodes shows them.

The nodes keep no data on disk (`--save '' --appendonly no`) and fail over within seconds
(`--cluster-node-timeout 1000`). Each node lives in `<workdir>/<port>/` (its `nodes.conf` and
`redis.log`); `<workdir>/cluster.json` names the nodes' ports and pids, so another process (the
command line below, scripts/cluster.sh) can report on or stop a cluster it did not start.

Nothing here reads Django settings. As a command:

    python -m common.redis_cluster start|stop|status --dir var/redis-cluster [--port-base 7000]
"""

import argparse
import atexit
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import redis
from redis.backoff import NoBackoff
from redis.connection import Connection
from redis.retry import Retry

SLOTS = 16384
STATE_FILE = "cluster.json"
# Redis' own default: the cluster bus listens on the client port + 10000 (fixed ports only).
BUS_PORT_OFFSET = 10000
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# redis-py's Connection is not annotated; its raw replies are Any either way.
_Connection: Callable[..., Any] = Connection


class ClusterError(RuntimeError):
    """The cluster did not start, did not become ok, or did not fail over in time; the message
    carries what each node reported and the tails of their logs."""


@dataclass(frozen=True)
class NodeInfo:
    """One node as it is now: `role` is "master", "replica" or "down" (its process is not running);
    `master_port` is a replica's master; `pid` is None for a node that is down."""

    port: int
    role: str
    pid: int | None
    master_port: int | None = None


class _Node:
    """A node's fixed facts (ports, folder) and its process, if this object started it."""

    def __init__(self, port: int, bus_port: int, folder: Path) -> None:
        self.port = port
        self.bus_port = bus_port
        self.folder = folder
        self.proc: subprocess.Popen[bytes] | None = None
        # Set alone when the process was started by another LocalCluster (attach()).
        self.pid: int | None = None

    @property
    def current_pid(self) -> int | None:
        if self.proc is not None:
            return self.proc.pid if self.proc.poll() is None else None
        if self.pid is not None and _is_redis_server(self.pid, self.port):
            return self.pid
        return None

    @property
    def log(self) -> Path:
        return self.folder / "redis.log"


def _is_redis_server(pid: int, port: int) -> bool:
    """Whether `pid` is a live redis-server on `port` (its title reads `redis-server 127.0.0.1:PORT
    [cluster]`): a pid recorded before a reboot may belong to another program, or another Redis."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return comm.startswith("redis-server") and f":{port} " in f"{title} " and state != "Z"


def _free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports (all sockets held open together, so none repeats)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def _ask(port: int, *command: str, timeout: float = 1.0) -> Any:
    """One command to one node, its raw reply (no redis-py response callbacks: their parsing of
    CLUSTER NODES or ROLE differs between versions), no retries: a dead node fails at once."""
    conn = _Connection(
        host="127.0.0.1",
        port=port,
        decode_responses=True,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )
    try:
        conn.send_command(*command)
        return conn.read_response()
    finally:
        conn.disconnect()


def _parse_info(text: str) -> dict[str, str]:
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _cluster_info(port: int) -> dict[str, str]:
    return _parse_info(str(_ask(port, "CLUSTER", "INFO")))


def _cluster_nodes(port: int) -> list[dict[str, Any]]:
    """CLUSTER NODES of one node: each node's id, port, flags, master id and count of slots."""
    rows = []
    for line in str(_ask(port, "CLUSTER", "NODES")).splitlines():
        fields = line.split()
        if len(fields) < 8:
            continue
        address = fields[1].split("@", 1)[0]
        slots = 0
        for part in fields[8:]:
            if part.startswith("["):  # a slot being migrated or imported
                continue
            low, _, high = part.partition("-")
            slots += int(high or low) - int(low) + 1
        rows.append(
            {
                "id": fields[0],
                "port": int(address.rsplit(":", 1)[1]),
                "flags": set(fields[2].split(",")),
                "master_id": None if fields[3] == "-" else fields[3],
                "slots": slots,
            }
        )
    return rows


class LocalCluster:
    """A Redis Cluster of `masters` masters with `replicas` replicas each, all on 127.0.0.1.

    `ports`: the nodes' client ports (masters + masters * replicas of them; the bus listens on
    port + 10000), or None for free ports picked at start (the bus on a free port too, via
    `--cluster-port`), retried when another process takes one first. `workdir`: the folder of the
    nodes' folders; made if missing. `stop_at_exit`: stop the nodes when this process exits, if
    not stopped before (an interrupted test run leaves no cluster behind); the command line's
    `start` leaves them running.
    """

    def __init__(
        self,
        workdir: Path | str,
        *,
        masters: int = 3,
        replicas: int = 1,
        ports: Sequence[int] | None = None,
        node_timeout_ms: int = 1000,
        start_timeout: float = 30.0,
        stop_at_exit: bool = True,
        redis_server: str | None = None,
        redis_cli: str | None = None,
    ) -> None:
        if masters < 3:
            raise ValueError("Redis Cluster needs at least 3 masters")
        if replicas < 0:
            raise ValueError("replicas must be >= 0")
        self.workdir = Path(workdir).resolve()
        self.masters = masters
        self.replicas = replicas
        self.size = masters * (1 + replicas)
        if ports is not None and len(ports) != self.size:
            raise ValueError(f"{self.size} ports needed, {len(ports)} given")
        self.fixed_ports = list(ports) if ports is not None else None
        self.node_timeout_ms = node_timeout_ms
        self.start_timeout = start_timeout
        self.stop_at_exit = stop_at_exit
        self.redis_server = redis_server or shutil.which("redis-server")
        self.redis_cli = redis_cli or shutil.which("redis-cli")
        self._nodes: list[_Node] = []
        # port -> (role, master port) as last seen: which replica should take over a killed master.
        self._topology: dict[int, tuple[str, int | None]] = {}

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Start the nodes, create the cluster and wait until every node says `cluster_state:ok`
        with all 16384 slots assigned and every replica in sync. On failure nothing is left
        running and ClusterError says why (with the nodes' log tails)."""
        if self.redis_server is None or self.redis_cli is None:
            raise ClusterError(
                "redis-server and redis-cli are needed on PATH; run `make services` (apt-get install redis-server)"
            )
        if self._nodes:
            raise ClusterError("this LocalCluster is already started")
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.stop_at_exit:
            atexit.register(self.stop)
        try:
            planned: list[int | None] = [*self.fixed_ports] if self.fixed_ports else [None] * self.size
            for port in planned:
                self._nodes.append(self._start_new_node(port))
            self._create()
            self.wait_ok(self.start_timeout)
        except BaseException:
            self.stop()
            raise
        self._save_state()
        return self

    def stop(self, *, clean: bool = True) -> None:
        """Terminate every node (SIGTERM, then SIGKILL after 10 s), wait for them and, with `clean`,
        remove their folders and the state file."""
        atexit.unregister(self.stop)
        for node in self._nodes:
            pid = node.current_pid
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        for node in self._nodes:
            self._wait_dead(node, 10.0)
        if clean:
            for node in self._nodes:
                shutil.rmtree(node.folder, ignore_errors=True)
            (self.workdir / STATE_FILE).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.workdir.rmdir()  # only when nothing else of the caller's is in it
        self._nodes = []
        self._topology = {}

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @classmethod
    def attach(cls, workdir: Path | str) -> "LocalCluster | None":
        """The cluster described by `workdir/cluster.json` (started by another process), or None.
        Its nodes can be listed, stopped and restarted; they are not this process's children."""
        folder = Path(workdir).resolve()
        try:
            state = json.loads((folder / STATE_FILE).read_text())
        except (OSError, ValueError):
            return None
        cluster = cls(
            folder,
            masters=state["masters"],
            replicas=state["replicas"],
            ports=[n["port"] for n in state["nodes"]] if state.get("fixed_ports") else None,
            node_timeout_ms=state["node_timeout_ms"],
            stop_at_exit=False,
        )
        for item in state["nodes"]:
            node = _Node(item["port"], item["bus_port"], folder / str(item["port"]))
            node.pid = item["pid"]
            cluster._nodes.append(node)
        return cluster

    # ------------------------------------------------------------------ what the cluster is now

    @property
    def url(self) -> str:
        """`redis://127.0.0.1:PORT` of a live master, for `redis.cluster.RedisCluster.from_url`
        (the client discovers the other nodes from it)."""
        masters = [n.port for n in self.nodes if n.role == "master"]
        if not masters:
            raise ClusterError("no live master (is the cluster started?)")
        return f"redis://127.0.0.1:{masters[0]}"

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self._nodes]

    @property
    def nodes(self) -> list[NodeInfo]:
        """Every node by port, its role asked of the node itself (ROLE)."""
        found = []
        for node in sorted(self._nodes, key=lambda n: n.port):
            pid = node.current_pid
            role, master_port = "down", None
            if pid is not None:
                try:
                    answer = _ask(node.port, "ROLE")
                except redis.RedisError:
                    answer = None
                if answer and answer[0] == "master":
                    role = "master"
                elif answer and answer[0] == "slave":
                    role, master_port = "replica", int(answer[2])
            found.append(NodeInfo(node.port, role, pid, master_port))
        return found

    def slot_map(self) -> list[int]:
        """The master port serving each of the 16384 slots, as a live node sees it (CLUSTER SLOTS)."""
        owners = [0] * SLOTS
        for port in self._live_ports():
            try:
                ranges = _ask(port, "CLUSTER", "SLOTS")
            except redis.RedisError:
                continue
            for entry in ranges:
                low, high, master = int(entry[0]), int(entry[1]), entry[2]
                owners[low : high + 1] = [int(master[1])] * (high - low + 1)
            return owners
        raise ClusterError("no live node answered CLUSTER SLOTS")

    def status(self) -> dict[int, dict[str, str]]:
        """CLUSTER INFO of every live node, by port."""
        found = {}
        for port in self._live_ports():
            try:
                found[port] = _cluster_info(port)
            except redis.RedisError as error:
                found[port] = {"error": str(error)}
        return found

    def is_ok(self, *, replicas_in_sync: bool = True) -> bool:
        """Every live node says `cluster_state:ok` with all slots assigned and served, and agrees
        on the masters; with `replicas_in_sync`, every live replica's link to its master is up."""
        live = self._live_ports()
        if not live:
            return False
        try:
            views = []
            for port in live:
                info = _cluster_info(port)
                if info.get("cluster_state") != "ok" or int(info.get("cluster_slots_ok", 0)) != SLOTS:
                    return False
                if int(info.get("cluster_slots_assigned", 0)) != SLOTS:
                    return False
                rows = _cluster_nodes(port)
                views.append(
                    sorted(
                        r["port"] for r in rows if r["slots"] and "fail" not in r["flags"] and "master" in r["flags"]
                    )
                )
            if any(view != views[0] for view in views):
                return False  # a node has not heard of a promotion yet
            if replicas_in_sync:
                for port in live:
                    role = _ask(port, "ROLE")
                    if role[0] == "slave" and role[3] != "connected":
                        return False
        except redis.RedisError:
            return False
        return True

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Until `is_ok()` (ClusterError with each node's state and log after `timeout` seconds)."""
        if not self._wait(self.is_ok, timeout):
            raise ClusterError(f"cluster not ok after {timeout:.0f} s\n{self._report()}")
        self._remember_topology()

    # ------------------------------------------------------------------ failures

    def kill_master(self, target: int) -> int:
        """SIGKILL a master: `target` is a port, or an index into the live masters by port. Returns
        the killed port. Its replicas are remembered for `wait_failover`."""
        self._remember_topology()
        masters = sorted(p for p, (role, _) in self._topology.items() if role == "master")
        if target in masters:
            port = target
        elif 0 <= target < len(masters):
            port = masters[target]
        else:
            raise ValueError(f"{target} is neither a live master's port nor an index into {masters}")
        node = self._node(port)
        pid = node.current_pid
        if pid is None:
            raise ClusterError(f"node {port} is not running")
        os.kill(pid, signal.SIGKILL)
        self._wait_dead(node, 10.0)
        self._save_state()
        return port

    def wait_failover(self, killed_port: int, timeout: float = 15.0) -> int:
        """Until a replica of the dead master `killed_port` is a master and every surviving node
        says the cluster is ok again; returns the promoted node's port."""
        replicas = [p for p, (role, master) in self._topology.items() if role == "replica" and master == killed_port]
        if not replicas:
            raise ClusterError(f"{killed_port} had no replica (as last seen): nothing can take over its slots")
        if self._node(killed_port).current_pid is not None:
            raise ClusterError(f"{killed_port} is still running")
        promoted: list[int] = []

        def done() -> bool:
            for port in replicas:
                try:
                    if _ask(port, "ROLE")[0] == "master" and self.is_ok(replicas_in_sync=False):
                        promoted.append(port)
                        return True
                except redis.RedisError:
                    continue
            return False

        if not self._wait(done, timeout):
            raise ClusterError(
                f"no replica of {killed_port} ({replicas}) took over within {timeout:.0f} s\n{self._report()}"
            )
        self._remember_topology()
        return promoted[0]

    def restart_node(self, port: int, timeout: float = 20.0) -> str:
        """Start a node that is down again, on its ports with its nodes.conf: it rejoins the cluster.
        A former master whose slots were taken over comes back as a replica (of the node that took
        them). Waits until it is in sync and the cluster ok; returns its role."""
        node = self._node(port)
        if node.current_pid is not None:
            raise ClusterError(f"node {port} is already running")
        # The others serve every slot: this node cannot own any, so it must end as a replica.
        expect_replica = self.is_ok(replicas_in_sync=False)
        self._spawn(node)
        self._wait_answers(node)

        def settled() -> bool:
            try:
                role = _ask(port, "ROLE")[0]
            except redis.RedisError:
                return False
            return (role == "slave" or not expect_replica) and self.is_ok()

        if not self._wait(settled, timeout):
            raise ClusterError(f"node {port} did not rejoin within {timeout:.0f} s\n{self._report()}")
        self._remember_topology()
        self._save_state()
        return self._topology[port][0]

    def reshard(self, from_port: int, to_port: int, slots: int | None = None, timeout: float = 120.0) -> int:
        """Move `slots` hash slots (all of them by default) of the master on `from_port` to the
        master on `to_port` with `redis-cli --cluster reshard`, as an operator adding or emptying a
        node does: keys move slot by slot (MIGRATE) while clients keep working (ASK and MOVED
        redirects). Waits until the cluster is ok; returns the slots moved."""
        assert self.redis_cli is not None
        rows = {row["port"]: row for row in _cluster_nodes(from_port)}
        count = rows[from_port]["slots"] if slots is None else slots
        command = [
            self.redis_cli,
            "--cluster",
            "reshard",
            f"127.0.0.1:{from_port}",
            "--cluster-from",
            rows[from_port]["id"],
            "--cluster-to",
            rows[to_port]["id"],
            "--cluster-slots",
            str(count),
            "--cluster-yes",
            "--cluster-pipeline",
            "100",
        ]
        self._redis_cli(command, "reshard", timeout)
        self.wait_ok()
        return int(count)

    # ------------------------------------------------------------------ inside

    def _start_new_node(self, fixed_port: int | None) -> _Node:
        """Start one node and wait until it answers; with free ports, up to 5 tries (a port may be
        taken between picking and binding it)."""
        attempts = 1 if fixed_port is not None else 5
        error = ""
        for _ in range(attempts):
            if fixed_port is not None:
                port, bus_port = fixed_port, fixed_port + BUS_PORT_OFFSET
            else:
                # Not one of the other nodes' ports: one of them may have just exited.
                taken = {p for n in self._nodes for p in (n.port, n.bus_port)}
                port, bus_port = [p for p in _free_ports(2 + len(taken)) if p not in taken][:2]
            node = _Node(port, bus_port, self.workdir / str(port))
            shutil.rmtree(node.folder, ignore_errors=True)  # a stale nodes.conf would join an old cluster
            node.folder.mkdir(parents=True)
            self._spawn(node)
            try:
                self._wait_answers(node)
                return node
            except ClusterError as failed:
                error = str(failed)
                self._wait_dead(node, 5.0)
                shutil.rmtree(node.folder, ignore_errors=True)  # its log's tail is in the error
        if fixed_port is not None:
            error += f"\n(is another server on port {fixed_port} or {fixed_port + BUS_PORT_OFFSET}? choose other ports)"
        raise ClusterError(error)

    def _spawn(self, node: _Node) -> None:
        assert self.redis_server is not None
        node.proc = subprocess.Popen(
            [
                self.redis_server,
                "--port",
                str(node.port),
                "--cluster-port",
                str(node.bus_port),
                "--bind",
                "127.0.0.1",
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",  # in --dir
                "--cluster-node-timeout",
                str(self.node_timeout_ms),
                "--appendonly",
                "no",
                "--save",
                "",
                # A replica's sync starts at once (not after the default 5 s wait for others).
                "--repl-diskless-sync-delay",
                "0",
                "--maxmemory-policy",
                "noeviction",
                "--dir",
                str(node.folder),
                "--logfile",
                str(node.log),
                "--daemonize",
                "no",
            ],
            cwd=node.folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Its own session: a terminal's Ctrl-C or hang-up does not reach it (scripts/cluster.sh
            # leaves the nodes running after the command returns).
            start_new_session=True,
        )
        node.pid = None

    def _wait_answers(self, node: _Node, timeout: float = 10.0) -> None:
        """Until the node answers PING as the process we started (not another server already on
        that port); ClusterError with its log tail if it exits or stays silent."""
        assert node.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node.proc.poll() is not None:
                raise ClusterError(
                    f"redis-server on port {node.port} (bus {node.bus_port}) exited with {node.proc.returncode}\n"
                    + self._log_tail(node)
                )
            try:
                if _parse_info(_ask(node.port, "INFO", "server", timeout=0.5)).get("process_id") == str(node.proc.pid):
                    return
            except redis.RedisError:
                pass
            time.sleep(0.05)
        node.proc.kill()
        raise ClusterError(
            f"redis-server on port {node.port} did not answer within {timeout:.0f} s\n{self._log_tail(node)}"
        )

    def _create(self) -> None:
        assert self.redis_cli is not None
        command = [
            self.redis_cli,
            "--cluster",
            "create",
            *(f"127.0.0.1:{node.port}" for node in self._nodes),
            "--cluster-replicas",
            str(self.replicas),
            "--cluster-yes",
        ]
        self._redis_cli(command, "create", 60.0)

    def _redis_cli(self, command: list[str], what: str, timeout: float) -> None:
        """Run `redis-cli --cluster <what> ...`; ClusterError with its output's tail and each node's
        state when it fails or hangs."""
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as timed_out:
            raise ClusterError(f"redis-cli --cluster {what} hung for {timeout:.0f} s\n{self._report()}") from timed_out
        output = _ANSI.sub("", done.stdout + done.stderr)
        if done.returncode != 0 or "[ERR]" in output:
            tail = "\n".join(output.splitlines()[-15:])
            raise ClusterError(f"redis-cli --cluster {what} failed ({done.returncode}):\n{tail}\n{self._report()}")

    def _node(self, port: int) -> _Node:
        for node in self._nodes:
            if node.port == port:
                return node
        raise ValueError(f"no node on port {port} in this cluster ({self.ports})")

    def _live_ports(self) -> list[int]:
        return [node.port for node in self._nodes if node.current_pid is not None]

    def _remember_topology(self) -> None:
        self._topology = {
            info.port: (info.role, info.master_port) for info in self.nodes if info.role in ("master", "replica")
        }

    def _wait_dead(self, node: _Node, timeout: float) -> None:
        """Until the node's process is gone (reaped, if it is our child); SIGKILL after `timeout`."""
        if node.proc is not None:
            try:
                node.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                node.proc.kill()
                node.proc.wait(timeout=10)
            return
        pid = node.pid
        if pid is None:
            return
        deadline = time.monotonic() + timeout
        while _is_redis_server(pid, node.port):
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + 10
            time.sleep(0.05)
        node.pid = None

    @staticmethod
    def _wait(condition: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if condition():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)

    def _save_state(self) -> None:
        state = {
            "masters": self.masters,
            "replicas": self.replicas,
            "node_timeout_ms": self.node_timeout_ms,
            "fixed_ports": self.fixed_ports is not None,
            "nodes": [{"port": n.port, "bus_port": n.bus_port, "pid": n.current_pid} for n in self._nodes],
        }
        path = self.workdir / STATE_FILE
        path.with_suffix(".tmp").write_text(json.dumps(state, indent=2))
        path.with_suffix(".tmp").replace(path)

    @staticmethod
    def _log_tail(node: _Node, lines: int = 12) -> str:
        try:
            text = node.log.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            text = ["(no log)"]
        return f"--- {node.log} (last {lines} lines)\n" + "\n".join(text)

    def _report(self) -> str:
        """Each node's state and log tail, for an error message."""
        parts = []
        for node in self._nodes:
            pid = node.current_pid
            if pid is None:
                state = "down"
            else:
                try:
                    info = _cluster_info(node.port)
                    state = " ".join(
                        f"{k}={info.get(k)}"
                        for k in ("cluster_state", "cluster_slots_assigned", "cluster_slots_ok", "cluster_known_nodes")
                    )
                    state += f" role={_ask(node.port, 'ROLE')[0]}"
                except redis.RedisError as error:
                    state = f"not answering: {error}"
            parts.append(f"node {node.port} (pid {pid}): {state}\n{self._log_tail(node)}")
        return "\n".join(parts)


# ---------------------------------------------------------------------- command line


def _main(argv: Sequence[str] | None = None) -> int:
    """`start`, `stop` or `status` of the cluster under `--dir` (see the module docstring). Exit
    codes: 0 done (status: cluster_state ok), 1 failed (status: not ok), 3 (status) not running.
    `start` and an ok `status` print REDIS_CLUSTER_URL=... on stdout; the rest goes to stderr."""
    args = _parser().parse_args(argv)
    cluster = LocalCluster.attach(args.dir)
    running = cluster is not None and any(info.role != "down" for info in cluster.nodes)
    if args.action == "status":
        return _cluster_status(cluster if running else None, workdir=args.dir)
    if args.action == "stop":
        return _cluster_stop(cluster, workdir=args.dir)
    if cluster is not None and running:
        started = _cluster_revive(cluster, workdir=args.dir)
    else:
        started = _cluster_start(args, leftover=cluster)
    if started is None:
        return 1
    print(f"REDIS_CLUSTER_URL={started.url}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m common.redis_cluster", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--dir", default="var/redis-cluster", help="the nodes' folders and cluster.json")
    parser.add_argument("--port-base", type=int, default=7000, help="first port; the nodes take the next ones")
    parser.add_argument("--masters", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=1)
    return parser


def _say(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr)


def _cluster_status(cluster: LocalCluster | None, *, workdir: str) -> int:
    """Each node's role; 0 when cluster_state is ok, 1 when not, 3 when no node runs (`cluster`
    None)."""
    if cluster is None:
        _say(f"not running ({workdir})")
        return 3
    for info in cluster.nodes:
        master = f" of {info.master_port}" if info.master_port else ""
        _say(f"node {info.port}: {info.role}{master} (pid {info.pid})")
    ok = cluster.is_ok()
    dead = sum(1 for info in cluster.nodes if info.role == "down")
    _say(("cluster_state: ok" if ok else "cluster_state: NOT ok") + (f" ({dead} node(s) down)" if dead else ""))
    if ok:
        print(f"REDIS_CLUSTER_URL={cluster.url}")
    return 0 if ok else 1


def _cluster_stop(cluster: LocalCluster | None, *, workdir: str) -> int:
    if cluster is None:
        _say(f"nothing started under {workdir}")
        return 0
    ports = cluster.ports
    cluster.stop()
    _say(f"stopped (ports {ports[0]}-{ports[-1]})" if ports else "stopped")
    return 0


def _cluster_revive(cluster: LocalCluster, *, workdir: str) -> LocalCluster | None:
    """`start` of a running cluster: the nodes that died restarted, then waited for cluster_state
    ok. None (the error said) when it does not come back."""
    down = [info.port for info in cluster.nodes if info.role == "down"]
    try:
        for port in down:
            _say(f"node {port} is down: restarting it")
            cluster.restart_node(port)
        cluster.wait_ok()
    except ClusterError as error:
        _say(f"error: {error}\n(`stop` then `start` begins a fresh cluster)")
        return None
    if not down:
        _say(f"already running ({workdir})")
    return cluster


def _cluster_start(args: argparse.Namespace, *, leftover: LocalCluster | None) -> LocalCluster | None:
    """`start` afresh, after stopping a `leftover` whose nodes are all gone (a reboot). None (the
    error said) when the cluster does not start."""
    if leftover is not None:
        leftover.stop()
    size = args.masters * (1 + args.replicas)
    cluster = LocalCluster(
        args.dir,
        masters=args.masters,
        replicas=args.replicas,
        ports=range(args.port_base, args.port_base + size),
        stop_at_exit=False,
    )
    try:
        cluster.start()
    except ClusterError as error:
        _say(f"error: {error}")
        return None
    _say(f"started {args.masters} masters + {args.masters * args.replicas} replicas ({args.dir})")
    return cluster


if __name__ == "__main__":
    sys.exit(_main())
