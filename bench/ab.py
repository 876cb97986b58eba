#!/usr/bin/env python3
"""Interleaved A/B of the web entrances of two versions: the hot reads and single-result POSTs of an
OLD git ref against the NEW tree (default: this working tree), on the same machine, database and
Redis, turn by turn, so that the machine's drift hits both sides alike.

    .venv/bin/python bench/ab.py --old REF [--new WORKTREE_OR_REF] [--rounds 4] [--seconds 10]
        [--players 100000] [--workers 64] [--single-connections 32] [--warmup 2] [--json PATH]
    tiny run (to see it work): --players 2000 --rounds 1 --seconds 2 --warmup 1

Setup, once:
  - REF is checked out with `git worktree add --detach /tmp/ab-<sha> REF` (a --new ref likewise),
    removed at the end with `git worktree remove --force`. Both sides run on this checkout's .venv:
    the run stops if a side's requirements.txt differs from this checkout's, or if the old tree's
    migrations (every tracked or untracked `*/migrations/*.py`) differ from the new tree's.
  - A database of its own (--database-url, default .../leaderboard_ab) is dropped, created and
    migrated with the NEW tree's migrations; Redis (127.0.0.1:6379) keys go under a prefix of their
    own, REDIS_KEY_PREFIX=lb-ab-<random>. At the end every key under it is deleted and the database
    dropped. The environment of both sides is scripts/bench.sh's: KEY_RATE_PER_S/BURST and
    READ_RATE_PER_S/BURST 100000, LOG_LEVEL=WARNING, DJANGO_SETTINGS_MODULE=leaderboard_site.settings
    .base (plus PROMETHEUS_MULTIPROC_DIR in a temporary folder, the same kind for both).
  - ONE Celery worker (`-Q scoring --concurrency 2`) and ONE beat, from the NEW tree, shared by both
    sides (they apply what either side accepted); the boards marker (<prefix>:epoch) is awaited.
  - A game and a server key (`manage.py create_game` / `create_server_key` in the NEW tree), seeded
    with --players players through the new side's signed batch API (bench/reads.py `seed`), which
    waits until the `all` board holds them. The old side's answers for a few players and the top 10
    are then checked against the new side's on that board (a WARNING if they differ: the two
    sides would not read the same thing).

Each side's web is started as `make run` / scripts/bench.sh start it: WEB_CONCURRENCY (default 2)
processes of `nice -n WEB_NICE(10) python -m leaderboard_site.serve --host 127.0.0.1 --port P`,
cwd = that side's tree, a port per side. Only one side runs at a time: a side's web processes are
started for its turn and stopped (SIGTERM, waited for) after it. Chosen over keeping both and
SIGSTOP/SIGCONT of the idle side because a stopped process keeps its listening socket, its
PostgreSQL and Redis connections and its timers (uvicorn's keep-alive timeouts, the apply buffer's
flush), which all fire at once on SIGCONT and land in the next turn; fresh processes give both sides
the same start every turn. Their cold start is then the same for both, and is kept out of the
figures by the readiness wait and the warmup below.

Rounds: --rounds rounds, ABBA (odd rounds old then new, even rounds new then old). One turn:
  1. start the side's web; ready = every process listens on the port and 16 new connections in a
     row are answered 200 by /health/ready (the time it took is printed);
  2. wait (at most 30 s) until the machine's CPU stays under 15% for 2 s; printed either way;
  3. WARMUP, printed and not counted: each load below for --warmup s (0: none);
  4. measured, each for --seconds: closed loops with --workers keep-alive connections of rank
     (GET .../boards/all/players/{random id}), top (.../boards/all/top?n=100) and around
     (.../players/{id}/around?r=5) (bench/reads.py `closed_loop`, `make_paths`, `Conn`), then
     single signed one-result POSTs .../matches/{uuid}/results from --single-connections
     connections (bench/ingest.py `singles`), which then waits until the boards caught up (the
     worker is idle before the next turn). Each loop also sends one request per connection first
     to open it (reads: the loop's GET; singles: GET /health/live), not counted: that is in the
     helpers and is all of it. Figures: req/s (answers 200, or 202 for POSTs, per second of the
     loop), p50, p99, errors = every other status or broken connection, counted and shown;
     the web processes' CPU (/proc, user + sys, both processes) per request of the loop (for
     singles it includes the catch-up wait's /health/ready polls) and the load generator's CPU
     (bench/_common.py CpuMeter) per turn;
  5. stop the side's web.
Every turn's figures go to stderr as it runs; at the end stdout gets the table: per endpoint and
side, req/s of every round and their median, the median p99, errors, median web CPU per request,
and new/old of the medians. --json PATH also gets every figure of every turn (warmups included).

Run it alone on the machine (docs/performance.md, "How to measure"). A default run (100,000 players,
4 rounds, 10 s) takes about 10 minutes: seeding ~1 min, then 8 turns of ~55-70 s.
"""

import argparse
import asyncio
import hashlib
import json
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, CpuMeter, log

PYTHON = ROOT / ".venv" / "bin" / "python"
CELERY = ROOT / ".venv" / "bin" / "celery"
LOGS = ROOT / "var" / "ab"
READS = ("rank", "top", "around")
ENDPOINTS = (*READS, "singles")
QUIET_SHARE, QUIET_S, QUIET_CAP_S = 0.15, 2, 30
GIT_ENV = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # never take the index lock of a shared checkout


# --------------------------------------------------------------------------- the two trees
@dataclass
class Side:
    name: str  # "old" or "new"
    tree: Path
    label: str
    sha: str
    port: int = 0
    made: bool = False  # a worktree of ours (removed at the end)
    procs: list = field(default_factory=list)


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True).stdout


def side_make(name: str, spec: str | None, made: dict[str, Path]) -> Side:
    """This working tree (spec None or a directory), or a detached worktree of a ref at /tmp/ab-<sha>."""
    if spec is None or Path(spec).is_dir():
        tree = Path(spec or ROOT).resolve()
        sha = git("rev-parse", "HEAD", cwd=tree).strip()
        changed = len(git("diff", "--name-only", "HEAD", cwd=tree).split())
        untracked = len(git("ls-files", "--others", "--exclude-standard", cwd=tree).split())
        return Side(name, tree, f"{tree} ({sha[:10]} + {changed} changed, {untracked} untracked files)", sha)
    try:
        sha = git("rev-parse", "--verify", f"{spec}^{{commit}}").strip()
    except subprocess.CalledProcessError:
        raise SystemExit(f"ab: {spec!r} is neither a directory nor a git ref") from None
    if sha not in made:
        path = Path(f"/tmp/ab-{sha[:12]}")
        add = ["git", "worktree", "add", "--detach", str(path), sha]
        subprocess.run(add, cwd=ROOT, check=True, env=GIT_ENV, stdout=sys.stderr)  # stdout is the table's
        made[sha] = path
    return Side(name, made[sha], f"{spec} ({sha[:10]})", sha, made=True)


def worktrees_remove(made: dict[str, Path]) -> None:
    for path in made.values():
        r = subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, env=GIT_ENV)
        if r.returncode:
            log(f"ab: WARNING: could not remove the worktree {path}")


def files_of(tree: Path) -> list[str]:
    out = git("ls-files", "--cached", "--others", "--exclude-standard", cwd=tree)
    return sorted(set(out.splitlines()))


def contents(tree: Path, names: list[str]) -> dict[str, bytes | None]:
    return {n: (tree / n).read_bytes() if (tree / n).is_file() else None for n in names}


def compatible_check(old: Side, new: Side) -> None:
    """Stop unless both sides fit this checkout's .venv and the new tree's migrations fit the old."""
    ours = (ROOT / "requirements.txt").read_bytes()
    for side in (old, new):
        if (side.tree / "requirements.txt").read_bytes() != ours:
            raise SystemExit(
                f"ab: requirements.txt of the {side.name} side ({side.label}) differs from this checkout's, "
                f"whose .venv both sides run on: this A/B cannot compare them"
            )
    mig = {s.name: [n for n in files_of(s.tree) if "/migrations/" in n and n.endswith(".py")] for s in (old, new)}
    a, b = contents(old.tree, mig["old"]), contents(new.tree, mig["new"])
    differ = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
    if differ:
        raise SystemExit(
            f"ab: the old tree's migrations differ from the new tree's ({len(differ)} files, e.g. "
            f"{', '.join(differ[:5])}): both sides would not run on the same schema; pick another --old"
        )


def tree_hash(tree: Path) -> str:
    """A hash of the service's files in a tree (bench/ and *.md left out): to see a working tree edited
    during the run (its processes are started anew every turn)."""
    h = hashlib.sha256()
    for name in files_of(tree):
        if name.startswith("bench/") or name.endswith(".md") or not (tree / name).is_file():
            continue
        h.update(name.encode() + b"\0" + (tree / name).read_bytes())
    return h.hexdigest()


# --------------------------------------------------------------------------- database, Redis, environment
def admin_url(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/postgres")), parts.path.lstrip("/")


def database_drop(url: str, create: bool) -> None:
    admin, name = admin_url(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if create:
            conn.execute(f'CREATE DATABASE "{name}"')


def redis_keys_drop(prefix: str) -> int:
    """Every key under the run's prefix (common/redis.py, on the settings of service_env's environment),
    once it is sure the settings name that prefix and no other deployment's."""
    from django.conf import settings

    from common.redis import deployment_keys_drop

    if settings.REDIS_KEY_PREFIX != prefix:
        raise RuntimeError(
            f"the settings name key prefix {settings.REDIS_KEY_PREFIX!r}, not {prefix!r}: no key dropped"
        )
    return deployment_keys_drop()


def service_env(args, prefix: str, tmp: Path) -> dict[str, str]:
    """scripts/bench.sh's environment, on the A/B's own database and key prefix."""
    env = {
        "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}",
        "DJANGO_SETTINGS_MODULE": "leaderboard_site.settings.base",
        "LOG_LEVEL": "WARNING",
        "KEY_RATE_PER_S": "100000",
        "KEY_RATE_BURST": "100000",
        "READ_RATE_PER_S": "100000",
        "READ_RATE_BURST": "100000",
        "DATABASE_URL": args.database_url,
        "REDIS_URL": args.redis_url,
        "REDIS_KEY_PREFIX": prefix,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp / "metrics"),
    }
    for name in ("REDIS_CLUSTER_URL", "CELERY_BROKER_URL"):  # the machine's Redis, for everything
        os.environ.pop(name, None)
    os.environ.update(env)  # the helpers of this process (bench/ingest.py reads the prefix at import)
    return {**os.environ}


def manage(tree: Path, env: dict, *args: str, log_name: str | None = None) -> str:
    """manage.py of a tree on this checkout's venv; its stdout (or appended to var/ab/<log_name>)."""
    out = subprocess.run([str(PYTHON), "manage.py", *args], cwd=tree, env=env, capture_output=True, text=True)
    if log_name:
        with open(LOGS / log_name, "a") as f:
            f.write(out.stdout + out.stderr)
    if out.returncode:
        raise SystemExit(f"ab: manage.py {' '.join(args)} in {tree} failed:\n{out.stderr[-2000:]}")
    return out.stdout


def provision(tree: Path, env: dict) -> tuple[str, str, str]:
    """A fresh game and server key, as bench/_common.provision makes them (in the NEW tree)."""
    slug = f"bench-ab-{secrets.token_hex(4)}"
    created = json.loads(manage(tree, env, "create_game", slug, "--name", "Bench").strip().splitlines()[-1])
    key = json.loads(manage(tree, env, "create_server_key", created["game"]).strip().splitlines()[-1])
    log(f"ab: game {created['game']} (season {created['season']}), key {key['key_id']}")
    return created["game"], key["key_id"], key["secret"]


# --------------------------------------------------------------------------- processes
class Procs:
    """Every process this run starts (each in a session of its own), so that all of them end."""

    def __init__(self) -> None:
        self.running: list[subprocess.Popen] = []

    def start(self, cmd: list[str], cwd: Path, env: dict, log_name: str) -> subprocess.Popen:
        with open(LOGS / log_name, "ab") as out:
            p = subprocess.Popen(
                cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self.running.append(p)
        return p

    def stop(self, procs: list[subprocess.Popen], timeout: float = 20) -> None:
        """SIGTERM, wait; SIGKILL to the process group of whatever is left (a worker's pool children)."""
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log(f"ab: pid {p.pid} did not end on SIGTERM in {timeout:g} s: SIGKILL")
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            if p in self.running:
                self.running.remove(p)

    def stop_all(self) -> None:
        self.stop(list(self.running))


def free_port(start: int) -> int:
    import socket

    port = start
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                try:
                    s2 = socket.socket()
                    s2.bind(("127.0.0.1", port))
                    s2.close()
                    return port
                except OSError:
                    pass
        port += 1


def listening_pids(port: int, pids: list[int]) -> set[int]:
    """Which of `pids` hold a socket listening on 127.0.0.1:port (/proc/net/tcp and /proc/PID/fd)."""
    inodes = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and int(cols[1].split(":")[1], 16) == port:
                inodes.add(f"socket:[{cols[9]}]")
    found = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes for fd in fds):
                found.add(pid)
        except OSError:
            continue
    return found


def web_start(side: Side, procs: Procs, env: dict, count: int, nice: int) -> float:
    """The side's web as make run starts it; returns the seconds until ready."""
    t0 = time.perf_counter()
    cmd = ["nice", "-n", str(nice), str(PYTHON), "-m", "leaderboard_site.serve"]
    cmd += ["--host", "127.0.0.1", "--port", str(side.port)]
    side.procs = [procs.start(cmd, side.tree, env, f"{side.name}-web.log") for _ in range(count)]
    url, answered = f"http://127.0.0.1:{side.port}/health/ready", 0
    while answered < 16:
        dead = [p.pid for p in side.procs if p.poll() is not None]
        if dead:
            raise RuntimeError(f"{side.name} web process(es) {dead} died at start-up: see {LOGS}/{side.name}-web.log")
        if time.perf_counter() - t0 > 90:
            raise RuntimeError(f"{side.name} web on port {side.port} not ready after 90 s")
        if len(listening_pids(side.port, [p.pid for p in side.procs])) < count:
            time.sleep(0.1)
            continue
        try:
            answered = answered + 1 if httpx.get(url, timeout=30).status_code == 200 else 0
        except httpx.HTTPError:
            answered = 0
        if not answered:
            time.sleep(0.2)
    return time.perf_counter() - t0


def jobs_start(new: Side, procs: Procs, env: dict, tmp: Path, prefix: str) -> None:
    """ONE worker and ONE beat from the new tree; waits for the boards marker."""
    worker = [str(CELERY), "-A", "leaderboard_site", "worker", "-l", "warning", "-Q", "scoring"]
    worker += ["--concurrency", "2", "-n", f"{prefix}@%h"]
    beat = [str(CELERY), "-A", "leaderboard_site", "beat", "-l", "warning", "-s", str(tmp / "beat-schedule")]
    started = [procs.start(worker, new.tree, env, "worker.log"), procs.start(beat, new.tree, env, "beat.log")]
    from boards.keys import epoch_key  # under the run's prefix: the settings read service_env's environment

    marker, r = epoch_key(), redis.Redis.from_url(env["REDIS_URL"])
    deadline = time.monotonic() + 300
    while not r.exists(marker):
        if any(p.poll() is not None for p in started):
            raise RuntimeError(f"the worker or beat died at start-up: see {LOGS}/worker.log, beat.log")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the boards marker {marker} never appeared: see {LOGS}/worker.log")
        time.sleep(0.5)
    r.close()


def web_cpu_s(procs: list[subprocess.Popen]) -> float:
    """User + sys CPU seconds of the (running) web processes so far."""
    total = 0
    for p in procs:
        with open(f"/proc/{p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def machine_quiet() -> tuple[float, float]:
    """Waits until the CPU stays under QUIET_SHARE for QUIET_S seconds, QUIET_CAP_S at most; returns
    (seconds waited, the last second's busy share)."""

    def busy() -> tuple[int, int]:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
        return sum(fields) - fields[3] - fields[4], sum(fields)

    t0, quiet, last, share = time.monotonic(), 0, busy(), 1.0
    while quiet < QUIET_S and time.monotonic() - t0 < QUIET_CAP_S:
        time.sleep(1)
        now = busy()
        share = (now[0] - last[0]) / max(1, now[1] - last[1])
        last = now
        quiet = quiet + 1 if share < QUIET_SHARE else 0
    return time.monotonic() - t0, share


# --------------------------------------------------------------------------- measuring
@dataclass
class Run:
    args: argparse.Namespace
    reads: ModuleType
    ingest: ModuleType
    game: str
    key_id: str
    secret: str
    paths: dict
    meter: CpuMeter = field(default_factory=CpuMeter)
    turns: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    reference: dict | None = None  # the new side's answers on the seeded board


def figures_line(name: str, f: dict) -> str:
    errors = f"errors {f['error_statuses']}" if f["errors"] else "no errors"
    return (
        f"  {name:>8}: {f['rps']:7.0f} req/s  p50 {f['p50_ms']:6.1f} ms  p99 {f['p99_ms']:6.1f} ms  "
        f"({f['ok']} ok, {errors})  web CPU {f['web_cpu_us_per_req']:.0f} us/req"
    )


async def load_one(run: Run, side: Side, name: str, seconds: float, seed: int) -> dict:
    """One loop of one endpoint on the side; its figures (errors as a count and by status)."""
    a = run.args
    cpu0 = web_cpu_s(side.procs)
    if name in READS:
        r = await run.reads.closed_loop("127.0.0.1", side.port, name, run.paths[name], a.workers, seconds)
        f = r.figures()
        f.update(errors=r.error_count, error_statuses=r.errors)
    else:
        ns = SimpleNamespace(
            url=f"http://127.0.0.1:{side.port}", timeout=120, redis_url=a.redis_url, seed=seed,
            players=a.players, single_connections=a.single_connections, single_seconds=seconds, drain_timeout=600,
        )  # fmt: skip
        f = await run.ingest.singles(ns, run.ingest.Service(ns, run.game, run.key_id, run.secret))
    cpu = web_cpu_s(side.procs) - cpu0
    f["web_cpu_s"] = cpu
    f["web_cpu_us_per_req"] = cpu / max(1, f["ok"] + f["errors"]) * 1e6
    return f


async def turn_loads(run: Run, side: Side, tag: str, seconds: float, measured: bool, seed: int) -> dict:
    out = {}
    for name in ENDPOINTS:
        if measured:
            with run.meter.phase(f"{tag}-{name}"):
                out[name] = await load_one(run, side, name, seconds, seed)
        else:
            out[name] = await load_one(run, side, name, seconds, seed)
        log(figures_line(name, out[name]) + ("" if measured else "  [warmup, not counted]"))
    return out


def turn(run: Run, side: Side, procs: Procs, env: dict, rnd: int, seq: int) -> dict:
    a, tag = run.args, f"r{rnd}-{side.name}"
    log(f"ab: round {rnd}, {side.name} ({side.label}), port {side.port}")
    ready_s = web_start(side, procs, env, a.web_concurrency, a.web_nice)
    try:
        waited, share = machine_quiet()
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        quiet = "quiet" if share < QUIET_SHARE else f"NOT quiet after {waited:.0f} s, measuring anyway"
        log(f"  web ready in {ready_s:.1f} s; machine {quiet} (CPU {share * 100:.0f}%, load {load})")
        if rnd == 1 and side.name == "old" and run.reference is not None:
            same_board_check(run, side, run.reference)
        out: dict = {"round": rnd, "side": side.name, "ready_s": ready_s, "quiet_wait_s": waited, "cpu_share": share}
        if a.warmup > 0:
            log(f"  warmup: each load for {a.warmup:g} s, not counted")
            out["warmup"] = asyncio.run(turn_loads(run, side, tag, a.warmup, False, seed=seq * 10 + 1))
        log(f"  measured: each load for {a.seconds:g} s")
        out["measured"] = asyncio.run(turn_loads(run, side, tag, a.seconds, True, seed=seq * 10 + 2))
    finally:
        procs.stop(side.procs)
    phases = [run.meter.phases[f"{tag}-{n}"] for n in ENDPOINTS]
    cpu, wall = sum(p["self_cpu_s"] + p["children_cpu_s"] for p in phases), sum(p["wall_s"] for p in phases)
    out["load_generator"] = {"cpu_s": cpu, "wall_s": wall}
    log(
        f"  load generator: {cpu:.1f} s CPU in {wall:.1f} s of measured loops ({cpu / wall * 100:.0f}% of one "
        f"core; singles' wall includes its wait for the boards)"
    )
    return out


# --------------------------------------------------------------------------- same board on both sides
def board_sample(port: int, game: str) -> dict:
    base = f"http://127.0.0.1:{port}/api/v1/games/{game}/boards/all"
    out: dict = {}
    with httpx.Client(timeout=30) as client:
        for pid in ("p0000001", "p0000002", "p0000003"):
            r = client.get(f"{base}/players/{pid}")
            out[pid] = [r.json().get("score"), r.json().get("rank")] if r.status_code == 200 else r.status_code
        r = client.get(f"{base}/top?n=10")
        out["top10"] = (
            [[e.get("player_id"), e.get("score")] for e in r.json()["entries"]] if r.is_success else r.status_code
        )
    return out


def same_board_check(run: Run, side: Side, reference: dict) -> None:
    seen = board_sample(side.port, run.game)
    if seen == reference:
        log("  the old side answers as the new did on the seeded board (3 ranks, the top 10)")
        return
    msg = f"WARNING: the old side reads the board otherwise than the new: {seen} vs {reference}"
    run.warnings.append(msg)
    log("  " + msg)


# --------------------------------------------------------------------------- set-up and the rounds
def seed_board(run: Run, new: Side, procs: Procs, env: dict) -> None:
    """--players players on the new side's signed batch API (bench/reads.py `seed`); the new side's
    answers on that board kept as the reference for the old side's."""
    a = run.args
    log(f"ab: seeding {a.players} players through the new side (port {new.port})")
    web_start(new, procs, env, a.web_concurrency, a.web_nice)
    try:
        t0 = time.perf_counter()
        ns = SimpleNamespace(url=f"http://127.0.0.1:{new.port}", players=a.players, seed_timeout=600)
        run.reads.seed(ns, run.game, run.key_id, run.secret)
        log(f"ab: seeded in {time.perf_counter() - t0:.1f} s")
        run.reference = board_sample(new.port, run.game)
    finally:
        procs.stop(new.procs)


def setup(args, old: Side, new: Side, procs: Procs, prefix: str, tmp: Path) -> tuple[Run, dict]:
    env = service_env(args, prefix, tmp)
    log(f"ab: database {args.database_url} anew, migrated by the new tree; Redis keys under {prefix}:")
    database_drop(args.database_url, create=True)
    manage(new.tree, env, "migrate", "--noinput", log_name="migrate.log")
    jobs_start(new, procs, env, tmp, prefix)
    import ingest  # after service_env: it reads the key prefix at import
    import reads

    game, key_id, secret = provision(new.tree, env)
    paths = reads.make_paths(game, args.players, random.Random(11))
    run = Run(args, reads, ingest, game, key_id, secret, paths)
    old.port = free_port(8790)
    new.port = free_port(old.port + 1)
    seed_board(run, new, procs, env)
    return run, env


def rounds(run: Run, old: Side, new: Side, procs: Procs, env: dict) -> None:
    """ABBA: odd rounds old then new, even rounds new then old."""
    watched = None if new.made else tree_hash(new.tree)
    seq = 0
    for rnd in range(1, run.args.rounds + 1):
        for side in (old, new) if rnd % 2 else (new, old):
            if side is new and watched is not None and tree_hash(new.tree) != watched:
                watched = tree_hash(new.tree)
                msg = f"WARNING: the new tree {new.tree} changed during the run (seen before round {rnd}'s new turn)"
                run.warnings.append(msg)
                log("ab: " + msg)
            seq += 1
            run.turns.append(turn(run, side, procs, env, rnd, seq))


# --------------------------------------------------------------------------- the report
def side_summary(turns: list[dict], side: str, name: str) -> dict:
    figs = [t["measured"][name] for t in turns if t["side"] == side]
    statuses: dict[str, int] = {}
    for f in figs:
        for k, v in f["error_statuses"].items():
            statuses[k] = statuses.get(k, 0) + v
    return {
        "rps": [f["rps"] for f in figs],
        "rps_median": statistics.median(f["rps"] for f in figs),
        "p50_ms_median": statistics.median(f["p50_ms"] for f in figs),
        "p99_ms": [f["p99_ms"] for f in figs],
        "p99_ms_median": statistics.median(f["p99_ms"] for f in figs),
        "ok": sum(f["ok"] for f in figs),
        "errors": sum(f["errors"] for f in figs),
        "error_statuses": statuses,
        "web_cpu_us_per_req_median": statistics.median(f["web_cpu_us_per_req"] for f in figs),
    }


def summary(turns: list[dict]) -> dict:
    out = {}
    for name in ENDPOINTS:
        old, new = side_summary(turns, "old", name), side_summary(turns, "new", name)
        ratio = {
            k: new[k] / old[k] if old[k] else float("nan")
            for k in ("rps_median", "p99_ms_median", "web_cpu_us_per_req_median")
        }
        out[name] = {"old": old, "new": new, "new_over_old": ratio}
    return out


def table(run: Run, old: Side, new: Side, summ: dict) -> list[str]:
    a = run.args
    lines = [
        f"ab: old = {old.label}; new = {new.label}",
        f"ab: {a.rounds} rounds ABBA, {a.seconds:g} s per loop (after {a.warmup:g} s of warmup each, not counted), "
        f"{a.players} players, {a.workers} read connections, {a.single_connections} POST connections, "
        f"{a.web_concurrency} web processes at nice {a.web_nice}",
        f"{'endpoint':<8} {'side':<7} {'req/s by round':<30} {'median':>8} {'p99 ms':>8} {'errors':>7} "
        f"{'web CPU us/req':>15}",
    ]
    for name, row in summ.items():
        for side in ("old", "new"):
            s = row[side]
            by_round = " ".join(f"{x:.0f}" for x in s["rps"])
            lines.append(
                f"{name:<8} {side:<7} {by_round:<30} {s['rps_median']:8.0f} {s['p99_ms_median']:8.1f} "
                f"{s['errors']:7d} {s['web_cpu_us_per_req_median']:15.0f}"
            )
        r = row["new_over_old"]
        lines.append(
            f"{name:<8} {'new/old':<7} {'':<30} {r['rps_median']:8.3f} {r['p99_ms_median']:8.3f} {'':>7} "
            f"{r['web_cpu_us_per_req_median']:15.3f}"
        )
    cpu = run.meter.totals()
    lines.append(
        f"load generator: {cpu['cpu_s']:.1f} s CPU in {cpu['wall_s']:.0f} s of measured loops "
        f"({cpu['share_of_one_core'] * 100:.0f}% of one core)"
    )
    return lines + run.warnings


def report(run: Run, old: Side, new: Side) -> None:
    summ = summary(run.turns)
    lines = table(run, old, new, summ)
    for status, sample in run.reads.ERROR_SAMPLES.items():
        log(f"ab: first {status} answer to a read: {sample}")
    if run.args.json:
        figures = {
            "config": vars(run.args),
            "sides": {
                s.name: {"label": s.label, "sha": s.sha, "tree": str(s.tree), "port": s.port} for s in (old, new)
            },
            "game": run.game,
            "reference_board": run.reference,
            "turns": run.turns,
            "summary": summ,
            "load_generator": {**run.meter.totals(), "phases": run.meter.phases},
            "read_error_samples": run.reads.ERROR_SAMPLES,
            "warnings": run.warnings,
            "lines": lines,
        }
        Path(run.args.json).write_text(json.dumps(figures, indent=2, default=str))
    for line in lines:
        print(line, flush=True)


# --------------------------------------------------------------------------- main
def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="the git ref of the old side")
    parser.add_argument("--new", help="a directory (a working tree) or a git ref; default: this working tree")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10, help="length of each measured loop")
    parser.add_argument("--warmup", type=float, default=2, help="seconds of each load per turn, not counted; 0: none")
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=64, help="connections of the read loops")
    parser.add_argument("--single-connections", type=int, default=32, help="connections of the single POSTs")
    parser.add_argument("--web-concurrency", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
    parser.add_argument("--web-nice", type=int, default=int(os.environ.get("WEB_NICE", "10")))
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/leaderboard_ab")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds <= 0 or args.players < 2 or args.workers < 1 or args.single_connections < 1:
        raise SystemExit("ab: --rounds, --seconds, --workers, --single-connections must be positive, --players >= 2")
    return args


def cleanup(args, procs: Procs, made: dict, prefix: str, tmp: Path, touched: bool) -> None:
    """Every step tried, whatever the one before did."""
    steps: list[Callable[[], object]] = [procs.stop_all]
    if touched:
        steps += [
            lambda: log(f"ab: {redis_keys_drop(prefix)} Redis keys under {prefix}: deleted"),
            lambda: database_drop(args.database_url, create=False),
            lambda: log(f"ab: database {admin_url(args.database_url)[1]} dropped"),
        ]
    steps += [lambda: worktrees_remove(made), lambda: subprocess.run(["rm", "-rf", str(tmp)], check=False)]
    for step in steps:
        try:
            step()
        except Exception as exc:  # report it and go on cleaning up
            log(f"ab: WARNING: clean-up step failed: {exc!r}")


def main() -> None:
    args = parse()
    LOGS.mkdir(parents=True, exist_ok=True)
    procs, touched = Procs(), False
    made: dict[str, Path] = {}
    prefix = f"lb-ab-{secrets.token_hex(4)}"
    tmp = Path(tempfile.mkdtemp(prefix="ab-run-"))
    try:
        old = side_make("old", args.old, made)
        new = side_make("new", args.new, made)
        compatible_check(old, new)
        log(f"ab: old = {old.label}; new = {new.label}; logs in {LOGS}/")
        log(f"ab: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        touched = True
        run, env = setup(args, old, new, procs, prefix, tmp)
        rounds(run, old, new, procs, env)
        report(run, old, new)
    finally:
        cleanup(args, procs, made, prefix, tmp, touched)


if __name__ == "__main__":
    main()
