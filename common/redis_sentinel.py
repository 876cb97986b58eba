"""A Sentinel-managed Redis on loopback, for tests and `make run-ha`: `LocalSentinels` starts a
primary, one replica and three sentinels (quorum 2) as `redis-server` processes.

Real processes, not a mock, because what matters is the servers' own behaviour: the sentinels
agreeing that the primary is down, promoting the replica, and redis-py, kombu and channels-redis
finding the new primary through them.

The sentinels judge the primary down after DOWN_AFTER_MS without an answer (Redis' default is
30 s; a studio would rather lose 1 s of writes than 30) and fail over within FAILOVER_TIMEOUT_MS.
The Redis servers keep an append-only file (fsync every second), so a stopped one comes back with
its data; each process lives in `<workdir>/<port>/` (its config, data and log), and
`<workdir>/sentinel.json` names the ports and pids, so another process (the command line below,
scripts/ha.sh) can report on or stop a group it did not start.

Nothing here reads Django settings. As a command:

    python -m common.redis_sentinel start|stop|status --dir var/redis-ha [--port-base 6390]

`start` and an ok `status` print REDIS_SENTINEL=... and REDIS_SENTINEL_MASTER=... on stdout.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

import redis

MASTER_NAME = "leaderboard"
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 10_000
STATE_FILE = "sentinel.json"


class SentinelError(RuntimeError):
    """The group did not start, or did not fail over in time; the message carries the log tails."""


def _free_ports(count: int) -> list[int]:
    ports: list[int] = []
    sockets = []
    try:
        while len(ports) < count:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
            ports.append(int(sock.getsockname()[1]))
    finally:
        for sock in sockets:
            sock.close()
    return ports


def _ask(port: int, *command: str, timeout: float = 0.5) -> Any:
    """One command to the server on `port`, or None when it does not answer."""
    try:
        with redis.Redis(port=port, socket_timeout=timeout, socket_connect_timeout=timeout, decode_responses=True) as r:
            return r.execute_command(*command)
    except redis.RedisError:
        return None


def _wait(condition: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False


class LocalSentinels:
    """A primary (first of `ports`), a replica (second) and three sentinels (the rest) on 127.0.0.1."""

    def __init__(self, workdir: Path | str, ports: list[int] | None = None, *, master_name: str = MASTER_NAME) -> None:
        self.dir = Path(workdir)
        self.ports = ports or _free_ports(5)
        self.master_name = master_name
        self.pids: dict[int, int] = {}
        self._procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def redis_ports(self) -> list[int]:
        return self.ports[:2]

    @property
    def sentinel_ports(self) -> list[int]:
        return self.ports[2:]

    @property
    def sentinels(self) -> str:
        """REDIS_SENTINEL's value: `127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`."""
        return ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)

    def env(self) -> dict[str, str]:
        return {"REDIS_SENTINEL": self.sentinels, "REDIS_SENTINEL_MASTER": self.master_name}

    def start(self, timeout: float = 20.0) -> Self:
        """Start every process not running yet; wait until the sentinels know the primary and its
        replica and each other."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise SentinelError("redis-server is not installed")
        primary, replica = self.redis_ports
        for port in self.redis_ports:
            if not self.alive(port):
                self._start_redis(binary, port, replica_of=primary if port == replica and not self._known() else None)
        for port in self.sentinel_ports:
            if not self.alive(port):
                self._start_sentinel(binary, port, primary)
        self._save_state()
        if not _wait(self._settled, timeout):
            raise SentinelError(f"the sentinels did not settle within {timeout} s\n{self.report()}")
        return self

    def _known(self) -> bool:
        """Whether the sentinels already ran here (their configs say who the primary is now)."""
        return any((self.dir / str(port) / "sentinel.conf").exists() for port in self.sentinel_ports)

    def _settled(self) -> bool:
        for port in self.sentinel_ports:
            master = _ask(port, "SENTINEL", "MASTER", self.master_name)
            if not master:
                return False
            state = master if isinstance(master, dict) else dict(zip(master[::2], master[1::2], strict=True))
            if state.get("is_sdown") or int(state["num-slaves"]) < 1 or int(state["num-other-sentinels"]) < 2:
                return False
        return self.replica_in_sync()

    def replica_in_sync(self) -> bool:
        """Whether a replica of the primary has its link up (its first sync done)."""
        primary = self.primary()
        for port in self.redis_ports:
            info = _ask(port, "INFO", "replication") if port != primary else None
            if info and info.get("master_port") == primary and info.get("master_link_status") == "up":
                return True
        return False

    def _start_redis(self, binary: str, port: int, *, replica_of: int | None) -> None:
        folder = self.dir / str(port)
        folder.mkdir(parents=True, exist_ok=True)
        args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder)]
        args += ["--save", "", "--appendonly", "yes", "--appendfsync", "everysec"]
        args += ["--maxmemory-policy", "noeviction", "--logfile", str(folder / "redis.log")]
        args += ["--repl-diskless-sync-delay", "0"]  # a replica's first sync at once, not 5 s later
        if replica_of is not None:
            args += ["--replicaof", "127.0.0.1", str(replica_of)]
        self._spawn(port, args)

    def _start_sentinel(self, binary: str, port: int, primary: int) -> None:
        folder = self.dir / str(port)
        folder.mkdir(parents=True, exist_ok=True)
        config = folder / "sentinel.conf"
        if not config.exists():  # a sentinel rewrites its own config: kept, it remembers the failovers
            name = self.master_name
            config.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {folder}\nlogfile {folder / 'sentinel.log'}\n"
                f"sentinel monitor {name} 127.0.0.1 {primary} 2\n"
                f"sentinel down-after-milliseconds {name} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {name} {FAILOVER_TIMEOUT_MS}\n"
                f"sentinel parallel-syncs {name} 1\n"
            )
        self._spawn(port, [binary, str(config), "--sentinel"])

    def _spawn(self, port: int, args: list[str]) -> None:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self._procs[port], self.pids[port] = proc, proc.pid
        if not _wait(lambda: _ask(port, "PING") is not None, 10):
            raise SentinelError(f"redis-server on {port} did not start\n{self.report()}")

    def alive(self, port: int) -> bool:
        pid = self.pids.get(port)
        if pid is None:
            return False
        proc = self._procs.get(port)
        if proc is not None:
            return proc.poll() is None
        try:  # a group this process attached to: the pid must still be a redis-server (not reused)
            return "redis" in Path(f"/proc/{pid}/comm").read_text()
        except OSError:
            return False

    def primary(self) -> int | None:
        """The port the sentinels name as the primary now (the first that answers), or None."""
        for port in self.sentinel_ports:
            found = _ask(port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.master_name)
            if found:
                return int(found[1])
        return None

    def kill(self, port: int) -> None:
        """SIGKILL: a crash, or the host gone (nothing written out)."""
        pid = self.pids.get(port)
        if pid is not None and self.alive(port):
            os.kill(pid, signal.SIGKILL)
            proc = self._procs.get(port)
            if proc is not None:
                proc.wait(timeout=5)
            else:
                _wait(lambda: not self.alive(port), 5)

    def pause(self, port: int) -> None:
        """SIGSTOP: the process holds still (a replica that reads nothing more), until `resume`."""
        os.kill(self.pids[port], signal.SIGSTOP)

    def resume(self, port: int) -> None:
        os.kill(self.pids[port], signal.SIGCONT)

    def restart(self, port: int) -> None:
        """Start a Redis again (with its data): the sentinels make it a replica of the primary now."""
        binary = shutil.which("redis-server")
        assert binary is not None
        self._start_redis(binary, port, replica_of=None)
        self._save_state()

    def wait_promoted(self, killed: int, timeout: float = 15.0) -> int:
        """The port of the Redis the sentinels promoted in place of `killed` (and that says it is a
        primary); raises SentinelError when that takes longer than `timeout`."""

        def promoted() -> bool:
            now = self.primary()
            return now is not None and now != killed and str(_ask(now, "ROLE") or [""])[2:8] == "master"

        if not _wait(promoted, timeout, step=0.02):
            raise SentinelError(f"no failover within {timeout} s\n{self.report()}")
        found = self.primary()
        assert found is not None
        return found

    def stop(self, *, clean: bool = True) -> None:
        for port in self.ports:
            pid = self.pids.get(port)
            if pid is not None and self.alive(port):
                os.kill(pid, signal.SIGTERM)
        for port in self.ports:
            if not _wait(lambda port=port: not self.alive(port), 10):  # type: ignore[misc]
                self.kill(port)
            proc = self._procs.pop(port, None)
            if proc is not None:
                proc.wait(timeout=5)
        self.pids.clear()
        if clean:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            self._save_state()

    def _save_state(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        state = {"ports": self.ports, "pids": self.pids, "master_name": self.master_name}
        (self.dir / STATE_FILE).write_text(json.dumps(state))

    @classmethod
    def attach(cls, workdir: Path | str) -> "LocalSentinels | None":
        """The group a state file in `workdir` describes (its processes may be running or not)."""
        path = Path(workdir) / STATE_FILE
        if not path.exists():
            return None
        state = json.loads(path.read_text())
        group = cls(workdir, [int(p) for p in state["ports"]], master_name=state["master_name"])
        group.pids = {int(port): int(pid) for port, pid in state["pids"].items()}
        return group

    def status(self) -> dict[int, str]:
        """Each process's role now: master, slave, sentinel, or down."""
        roles = {}
        for port in self.ports:
            role = _ask(port, "ROLE") if self.alive(port) else None
            roles[port] = str(role[0]) if role else "down"
        return roles

    def report(self) -> str:
        lines = [f"{port}: {role}" for port, role in self.status().items()]
        for port in self.ports:
            for log in (self.dir / str(port)).glob("*.log"):
                tail = log.read_text(errors="replace").splitlines()[-8:]
                lines.append(f"--- {log}\n" + "\n".join(tail))
        return "\n".join(lines)


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m common.redis_sentinel")
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port-base", type=int, default=6390)
    args = parser.parse_args(argv)
    group = LocalSentinels.attach(args.dir)
    if args.action == "stop":
        if group is not None:
            group.stop(clean=False)
        print(f"redis-ha: stopped (data kept in {args.dir})", file=sys.stderr)
        return 0
    if args.action == "status":
        if group is None:
            print("redis-ha: not started", file=sys.stderr)
            return 1
        for port, role in group.status().items():
            print(f"redis-ha: {port} {role}", file=sys.stderr)
        if group.primary() is None:
            return 1
    else:
        group = group or LocalSentinels(args.dir, list(range(args.port_base, args.port_base + 5)))
        try:
            group.start()
        except SentinelError as error:
            print(f"redis-ha: error: {error}", file=sys.stderr)
            return 1
        print(f"redis-ha: primary on {group.primary()}, sentinels on {group.sentinels}", file=sys.stderr)
    for name, value in group.env().items():
        print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
