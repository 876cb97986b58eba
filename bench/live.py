#!/usr/bin/env python3
"""Live pushes as the clients see them: many WebSocket clients on one board while a result changes
its top 10 every few tenths of a second.

    .venv/bin/python bench/live.py                        # 1,000 clients, a change every 0.4 s for 20 s
    .venv/bin/python bench/live.py --clients 50 --seconds 5   # a small run, to see it work
    .venv/bin/python bench/live.py --url http://127.0.0.1:8000 [--game G --key-id K --secret S]

Without --url it starts a stack of its own as scripts/bench.sh does: a database made anew
(--database-url, default DATABASE_URL's server, database leaderboard_live_bench; its Redis keys go
under that database's own prefix and are dropped before and after), migrated; WEB_CONCURRENCY (2)
web processes at nice WEB_NICE (10) on one port, a worker (-Q scoring, concurrency 2) and beat;
/health/ready and the boards marker awaited; everything it started is stopped at the end (logs in
var/bench/live-*.log) and the database dropped (--keep-db keeps it). With --url it provisions a
game and a key through manage.py (or takes --game, --key-id, --secret) on the service's database.

The run: 10 players seeded (the top 10 full) and awaited over REST; --clients WebSockets opened to
/ws/games/{game}/boards/all/?region=global (--connect-at-once handshakes at a time), each waiting
for its first message; then every --every seconds one signed single-result POST gives a new
player a score above everyone's (a new leader: the top 10 changes) for --seconds; then --drain
seconds for the last pushes. Each client records when every message arrived (monotonic clock, the
same process as the POSTs) and parses them afterwards, so the receive loop stays light; the garbage
collector is off in the measured phase (a pause of this process would show as a short gap).

Figures: deliveries (messages after each client's first); changes delivered (each change seen by
every client, and client-changes seen of those expected); submit-to-screen p50/p99/max: from a
result's POST answered 202 to the first message at a client holding that player (every client,
every change); the gaps between consecutive messages of one client, its first included (smallest,
how many under 1 s and under 0.95 s); whether every client's last message is the final top 10;
the load generator's CPU (this process, bench/_common.py CpuMeter) over the measured phase, and
with a stack of its own the web processes' and the worker's CPU (/proc).
"""

import argparse
import asyncio
import gc
import itertools
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import websockets
from websockets.typing import Origin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, Conn, CpuMeter, log, match, now_iso, percentile, provision, signed_headers

LOGS = ROOT / "var" / "bench"
PYTHON = str(ROOT / ".venv" / "bin" / "python")


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", help="a running service (default: start a stack of its own)")
    p.add_argument("--game")
    p.add_argument("--key-id")
    p.add_argument("--secret")
    p.add_argument("--clients", type=int, default=1000)
    p.add_argument("--every", type=float, default=0.4, help="seconds between two changes of the top 10")
    p.add_argument("--seconds", type=float, default=20.0, help="how long the changes go on")
    p.add_argument("--drain", type=float, default=3.0, help="seconds after the last change")
    p.add_argument("--connect-at-once", type=int, default=50)
    p.add_argument("--database-url", help="the stack's own database (default: .../leaderboard_live_bench)")
    p.add_argument("--keep-db", action="store_true")
    p.add_argument("--json", help="write every figure here too")
    return p.parse_args()


# --------------------------------------------------------------------------- a stack of its own
def cpu_s(pid: int) -> float:
    """User + system CPU of a process and its waited-for children (/proc), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def group_cpu_s(pids: list[int]) -> float:
    """CPU of the processes and every descendant still running (Celery's pool children)."""
    total, seen = 0.0, set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += cpu_s(pid)
        try:
            todo += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except OSError:
            pass
    return total


@dataclass
class Stack:
    """Web, worker and beat started by this script on a database of its own."""

    env: dict[str, str]
    port: int
    tmp: Path
    web: list[subprocess.Popen] = field(default_factory=list)
    jobs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run(self, *args: str) -> str:
        return subprocess.run(args, cwd=ROOT, env=self.env, check=True, capture_output=True, text=True).stdout

    def spawn(self, name: str, *args: str) -> subprocess.Popen:
        out = open(LOGS / f"live-{name}.log", "ab")
        proc = subprocess.Popen(
            args, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        out.close()
        return proc

    def stop(self) -> None:
        procs = self.web + self.jobs
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def database_reset(url: str, create: bool) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if create:
            admin.execute(f'CREATE DATABASE "{name}"')


SETUP = "import django; django.setup(); "
KEYS_DROP = SETUP + "from common.redis import deployment_keys_drop; print(deployment_keys_drop())"
MARKER = SETUP + "from boards.keys import epoch_key as k; from common.redis import client as c; print(c().exists(k()))"


def stack_start(args: argparse.Namespace) -> Stack:
    base = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/leaderboard")
    database = args.database_url or urlunsplit(urlsplit(base)._replace(path="/leaderboard_live_bench"))
    tmp = Path(tempfile.mkdtemp(prefix="lb-live-bench-"))
    (tmp / "metrics").mkdir()
    env = {
        **os.environ,
        "DATABASE_URL": database,
        "DJANGO_SETTINGS_MODULE": "leaderboard_site.settings.base",
        "LOG_LEVEL": os.environ.get("LOG_LEVEL", "WARNING"),
        "KEY_RATE_PER_S": "100000",
        "KEY_RATE_BURST": "100000",
        "READ_RATE_PER_S": "100000",
        "READ_RATE_BURST": "100000",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp / "metrics"),
    }
    stack = Stack(env=env, port=free_port(), tmp=tmp)
    LOGS.mkdir(parents=True, exist_ok=True)
    log(f"live: a new database ({database}), migrate")
    database_reset(database, create=True)
    stack.run(PYTHON, "manage.py", "migrate", "--noinput")
    log(f"live: {stack.run(PYTHON, '-c', KEYS_DROP).strip()} Redis keys of the last run dropped")
    for _ in range(int(os.environ.get("WEB_CONCURRENCY", "2"))):
        nice = os.environ.get("WEB_NICE", "10")
        serve = [PYTHON, "-m", "leaderboard_site.serve", "--host", "127.0.0.1", "--port", str(stack.port)]
        stack.web.append(stack.spawn("web", "nice", "-n", nice, *serve))
    celery = [PYTHON, "-m", "celery", "-A", "leaderboard_site"]
    stack.jobs.append(
        stack.spawn(
            "worker",
            *celery,
            "worker",
            "-l",
            "warning",
            "-Q",
            "scoring",
            "--concurrency",
            "2",
            "-n",
            f"live-{stack.port}@%h",
        )
    )
    stack.jobs.append(stack.spawn("beat", *celery, "beat", "-l", "warning", "-s", str(tmp / "beat-schedule")))
    os.environ["DATABASE_URL"] = database  # provision() runs manage.py on the stack's database
    return stack


def stack_ready(stack: Stack) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(stack.url + "/health/ready", timeout=2):
                break
        except OSError:
            if any(p.poll() is not None for p in stack.web + stack.jobs):
                raise SystemExit("live: a process died at start-up; see var/bench/live-*.log") from None
            time.sleep(0.2)
    else:
        raise SystemExit(f"live: {stack.url}/health/ready never answered")
    while stack.run(PYTHON, "-c", MARKER).strip() != "1":  # the worker's recovery: boards rebuilt
        if time.monotonic() > deadline + 120:
            raise SystemExit("live: the boards marker never appeared; see var/bench/live-worker.log")
        time.sleep(1)


def free_port(start: int = 8790) -> int:
    import socket

    port = start
    while True:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) != 0:
                return port
        port += 1


def stack_stop(stack: Stack, args: argparse.Namespace) -> None:
    stack.stop()
    shutil.rmtree(stack.tmp, ignore_errors=True)
    try:
        log(f"live: {stack.run(PYTHON, '-c', KEYS_DROP).strip()} Redis keys dropped")
    except subprocess.CalledProcessError as exc:
        log(f"live: the Redis keys were not dropped: {exc.stderr.strip()[-300:]}")
    if not args.keep_db:
        database_reset(stack.env["DATABASE_URL"], create=False)


# --------------------------------------------------------------------------- the load
@dataclass
class Client:
    received: list[tuple[float, str]] = field(default_factory=list)  # (monotonic, raw message)


class Poster:
    """Signed single-result POSTs on one keep-alive connection."""

    def __init__(self, url: str, game: str, key_id: str, secret: str):
        parts = urlsplit(url)
        self.conn = Conn(parts.hostname or "127.0.0.1", parts.port or 80)
        self.game, self.key_id, self.secret = game, key_id, secret

    async def post(self, player: str, points: int) -> float:
        """POSTs one result; returns when its 202 came (monotonic)."""
        body = match(now_iso(ceil=True), [(player, points, "eu")])
        path = f"/api/v1/games/{self.game}/matches/{body.pop('match_id')}/results"
        raw = json.dumps(body).encode()
        status, answer = await self.conn.post(path, raw, signed_headers(self.key_id, self.secret, path, raw))
        if status != 202:
            raise SystemExit(f"live: POST answered {status}: {answer[:300]!r}")
        return time.monotonic()

    async def top(self) -> list[str]:
        status, answer = await self.conn.get(f"/api/v1/games/{self.game}/boards/all/top?n=10")
        return [e["player_id"] for e in json.loads(answer)["entries"]] if status == 200 else []


async def seed(poster: Poster) -> None:
    """Ten players below every change's score, awaited on the board (the worker applies)."""
    players = [f"s{i:02d}" for i in range(10)]
    for i, player in enumerate(players):
        await poster.post(player, 10 + i)
    deadline = time.monotonic() + 60
    while await poster.top() != players[::-1]:
        if time.monotonic() > deadline:
            raise SystemExit("live: the seeded players never reached the board (is the worker running?)")
        await asyncio.sleep(0.2)


async def listen(url: str, client: Client, opened: asyncio.Event, gate: asyncio.Semaphore, stop: asyncio.Event) -> None:
    """One client: every message stamped as it comes (`async for`: no task or timer per message);
    closes when `stop` is set."""
    async with gate:
        socket = await websockets.connect(url, origin=Origin("http://127.0.0.1"), open_timeout=60, max_size=2**20)

    async def closer() -> None:
        await stop.wait()
        await socket.close()

    closing = asyncio.ensure_future(closer())
    try:
        async for raw in socket:
            client.received.append((time.monotonic(), raw if isinstance(raw, str) else raw.decode()))
            opened.set()
    except websockets.ConnectionClosed:
        pass
    finally:
        await closing


async def load(args: argparse.Namespace, url: str, game: str, key: tuple[str, str], pids: list[list[int]]) -> dict:
    poster = Poster(url, game, *key)
    await seed(poster)
    clients = [Client() for _ in range(args.clients)]
    opened = [asyncio.Event() for _ in clients]
    gate, stop = asyncio.Semaphore(args.connect_at_once), asyncio.Event()
    parts = urlsplit(url)
    ws_url = f"ws://{parts.netloc}/ws/games/{game}/boards/all/?region=global"
    started = time.monotonic()
    tasks = [asyncio.ensure_future(listen(ws_url, c, o, gate, stop)) for c, o in zip(clients, opened, strict=True)]
    await asyncio.wait_for(asyncio.gather(*(o.wait() for o in opened)), timeout=120)
    log(f"live: {args.clients} clients connected in {time.monotonic() - started:.1f} s; changes begin")
    # No collector pauses in the measured phase: a pause late in one message's arrival and not in
    # the next would show as a gap under a second that the service did not make.
    gc.collect()
    gc.freeze()
    gc.disable()
    meter = CpuMeter()
    accepted: dict[str, float] = {}
    changes = max(1, round(args.seconds / args.every))
    service_cpu = [group_cpu_s(group) for group in pids]
    with meter.phase("measured"):
        begin = time.monotonic()
        for i in range(changes):
            await asyncio.sleep(max(0.0, begin + i * args.every - time.monotonic()))
            accepted[f"c{i:04d}"] = await poster.post(f"c{i:04d}", 1000 + i)
        await asyncio.sleep(args.drain)
    service_cpu = [group_cpu_s(group) - before for group, before in zip(pids, service_cpu, strict=True)]
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    gc.enable()
    poster.conn.close()
    return {
        "accepted": accepted,
        "clients": clients,
        "cpu": meter.phases["measured"],
        "changes": changes,
        "service_cpu_s": service_cpu,
    }


# --------------------------------------------------------------------------- the figures
def figures(run: dict) -> dict:
    accepted: dict[str, float] = run["accepted"]
    final = sorted(accepted, reverse=True)[:10]
    latencies: list[float] = []
    gaps: list[float] = []
    seen_by_all = dict.fromkeys(accepted, 0)
    finals = deliveries = 0
    for client in run["clients"]:
        parsed = [(at, [e["player_id"] for e in json.loads(raw)["entries"]]) for at, raw in client.received]
        deliveries += max(0, len(parsed) - 1)
        gaps += [b[0] - a[0] for a, b in itertools.pairwise(parsed)]
        finals += bool(parsed) and parsed[-1][1] == final
        for player, at in accepted.items():
            seen = next((t for t, players in parsed if player in players), None)
            if seen is not None:
                seen_by_all[player] += 1
                latencies.append(seen - at)
    n = len(run["clients"])
    return {
        "clients": n,
        "changes": run["changes"],
        "deliveries": deliveries,
        "changes_to_every_client": sum(1 for v in seen_by_all.values() if v == n),
        "client_changes_seen": len(latencies),
        "client_changes_expected": n * len(accepted),
        "final_top_at": finals,
        "p50_s": percentile(latencies, 50),
        "p99_s": percentile(latencies, 99),
        "max_s": max(latencies, default=float("nan")),
        "smallest_gap_s": min(gaps, default=float("nan")),
        "gaps": len(gaps),
        "gaps_under_1s": sum(1 for g in gaps if g < 1.0),
        "gaps_under_095s": sum(1 for g in gaps if g < 0.95),
        "load_cpu_s": run["cpu"]["self_cpu_s"],
        "wall_s": run["cpu"]["wall_s"],
    }


def report(f: dict, args: argparse.Namespace, game: str) -> None:
    n, changes = f["clients"], f["changes"]
    lines = [
        f"live: {n} clients on {game}/all, a new leader every {args.every:.2f} s for {args.seconds:g} s"
        f" ({changes} changes)",
        f"deliveries: {f['deliveries']:,} pushes after the first message ({f['deliveries'] / max(1, n):.1f} a client)",
        f"changes delivered: {f['changes_to_every_client']} of {changes} to every client; "
        f"{f['client_changes_seen']:,} of {f['client_changes_expected']:,} client-changes; "
        f"final top 10 last at {f['final_top_at']} of {n} clients",
        f"submit-to-screen: p50 {f['p50_s']:.3f} s  p99 {f['p99_s']:.3f} s  max {f['max_s']:.3f} s",
        f"gaps between one client's messages (its first included): smallest {f['smallest_gap_s']:.3f} s; "
        f"{f['gaps_under_1s']} of {f['gaps']:,} under 1 s, {f['gaps_under_095s']} under 0.95 s",
        f"load generator CPU: {f['load_cpu_s']:.1f} s over {f['wall_s']:.1f} s"
        f" ({100 * f['load_cpu_s'] / f['wall_s']:.0f}% of a core)",
    ]
    if "web_cpu_s" in f:
        lines.append(
            f"service CPU over the same time: web processes {f['web_cpu_s']:.1f} s,"
            f" worker and beat {f['jobs_cpu_s']:.1f} s"
        )
    print("\n".join(lines), flush=True)


def main() -> None:
    args = parse()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a socket per client, and the web's too
    if args.clients + 100 > hard:
        raise SystemExit(f"live: {args.clients} clients need more file descriptors than {hard}")
    stack = stack_start(args) if args.url is None else None
    try:
        if stack is not None:
            stack_ready(stack)
        url = stack.url if stack is not None else args.url
        game, key_id, secret = provision(args.game, args.key_id, args.secret, "live")
        pids = [[p.pid for p in stack.web], [p.pid for p in stack.jobs]] if stack else []
        run = asyncio.run(load(args, url, game, (key_id, secret), pids))
        f = figures(run)
        if stack is not None:
            f["web_cpu_s"], f["jobs_cpu_s"] = run["service_cpu_s"]
        report(f, args, game)
        if args.json:
            Path(args.json).write_text(json.dumps({"args": vars(args), "figures": f}, indent=2))
    finally:
        if stack is not None:
            stack_stop(stack, args)


if __name__ == "__main__":
    main()
