"""Shared bits of the benchmarks: signing, provisioning, payloads, percentiles, a minimal HTTP/1.1
client and the load generator's CPU meter (no Django)."""

import asyncio
import json
import math
import os
import random
import resource
import secrets
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the service's own signing helper (standard library only)
    sys.path.insert(0, str(ROOT))
REGIONS = ("eu", "na", "asia", "sa")

from common.signing import signed_headers as _signed_headers  # noqa: E402


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def signed_headers(key_id: str, secret: str, path: str, body: bytes, method: str = "POST") -> dict[str, str]:
    """A signed JSON request's headers (common/signing.py, the service's own helper)."""
    headers = _signed_headers(key_id=key_id, secret=secret, method=method, path=path, body=body)
    return {"Content-Type": "application/json", **headers}


def _manage(*args: str) -> dict:
    python = ROOT / ".venv" / "bin" / "python"
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    out = subprocess.run(
        [str(python), "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def provision(
    game: str | None, key_id: str | None, secret: str | None, label: str, season_start: str | None = None
) -> tuple[str, str, str]:
    """The given game and key, or a fresh game `bench-<random>` with a new server key (its season
    from `season_start`, ISO 8601, default now)."""
    if game and key_id and secret:
        return game, key_id, secret
    if game or key_id or secret:
        raise SystemExit("give all of --game, --key-id and --secret, or none")
    slug = f"bench-{label}-{secrets.token_hex(4)}"
    created = _manage(
        "create_game", slug, "--name", "Bench", *(["--season-start", season_start] if season_start else [])
    )
    key = _manage("create_server_key", created["game"])
    log(f"provisioned game {created['game']} (season {created['season']}), key {key['key_id']}")
    return created["game"], key["key_id"], key["secret"]


def player_id(n: int) -> str:
    return f"p{n:07d}"


def region_of(n: int) -> str:
    return REGIONS[n % len(REGIONS)]


def now_iso(ceil: bool = False) -> str:
    """Now in whole seconds; `ceil` rounds up, so a season created "now" (with microseconds) already
    contains it (a floored played_at can fall before the season's start: 409 season_closed)."""
    now = datetime.now(UTC)
    if ceil and now.microsecond:
        now = now.replace(microsecond=0) + timedelta(seconds=1)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def match(played_at: str, results: list[tuple[str, int, str]]) -> dict:
    return {
        "match_id": str(uuid.uuid4()),
        "played_at": played_at,
        "duration_s": 600,
        "results": [
            {"player_id": pid, "points": pts, "display_name": pid.upper(), "region": reg} for pid, pts, reg in results
        ],
    }


def random_pair(rng: random.Random, players: int) -> tuple[int, int]:
    a = rng.randrange(1, players + 1)
    b = rng.randrange(1, players + 1)
    while b == a:
        b = rng.randrange(1, players + 1)
    return a, b


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[k]


def redis_url(cli: str | None) -> str:
    return cli or os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


class Conn:
    """One HTTP/1.1 keep-alive connection on asyncio streams: the benchmarks' client. httpx costs
    several times more client CPU per request and would measure the client."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def get(self, path: str) -> tuple[int, bytes]:
        return await self.request("GET", path)

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        return await self.request("POST", path, body, headers)

    async def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """(status, body) of one request. Raises on a broken connection (then call close())."""
        reused = self.writer is not None
        if self.writer is None:
            await self._open()
        assert self.reader is not None and self.writer is not None
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}"]
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        if body is not None:
            head.append(f"Content-Length: {len(body)}")
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + (body or b""))
        try:
            if body:
                await self.writer.drain()
            answer_head = await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError):
            if not reused:
                raise
            # The server closed this idle keep-alive connection (uvicorn: after 5 s idle) before it
            # read the request: as any HTTP client does, send it again on a new connection.
            self.close()
            return await self.request(method, path, body, headers)
        status = int(answer_head[9:12])
        length, chunked, close = 0, False, False
        for line in answer_head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif name == b"connection" and b"close" in value.lower():
                close = True
        if chunked:
            content = b""
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                content += await self.reader.readexactly(size + 2)
                if size == 0:
                    break
        else:
            content = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, content

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class CpuMeter:
    """CPU (user + sys) of this process (all its threads) and of its waited-for children, per
    measured phase."""

    def __init__(self) -> None:
        self.phases: dict[str, dict[str, float]] = {}

    @staticmethod
    def _now() -> tuple[float, float, float]:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.perf_counter(), own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime

    @contextmanager
    def phase(self, name: str):
        wall, own, kids = self._now()
        try:
            yield
        finally:
            wall2, own2, kids2 = self._now()
            held = self.phases.setdefault(name, {"wall_s": 0.0, "self_cpu_s": 0.0, "children_cpu_s": 0.0})
            held["wall_s"] += wall2 - wall  # a name measured again adds up (interleaved blocks)
            held["self_cpu_s"] += own2 - own
            held["children_cpu_s"] += kids2 - kids

    def totals(self) -> dict[str, float]:
        wall = sum(p["wall_s"] for p in self.phases.values())
        own = sum(p["self_cpu_s"] for p in self.phases.values())
        kids = sum(p["children_cpu_s"] for p in self.phases.values())
        return {
            "wall_s": wall,
            "self_cpu_s": own,
            "children_cpu_s": kids,
            "cpu_s": own + kids,
            "share_of_one_core": (own + kids) / wall if wall else 0.0,
        }


# --------------------------------------------------------------------------- the service's own CPU
_TICK = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a live process, from /proc/PID/stat: its own user + system time
    and that of its children it has reaped (cutime, cstime). Without the latter, a PostgreSQL
    backend or a pool process that exits mid-phase took all its CPU since it started out of the
    phase's sum (one phase measured 32 us of PostgreSQL a result, the next 212)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / _TICK


def tree_cpu_s(roots: list[int]) -> float:
    """CPU seconds of these processes and every live descendant (a Celery worker's pool, the
    PostgreSQL server's backends)."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := _proc_stat(int(entry.name))) is not None:
            stats[int(entry.name)] = found
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    total, todo, seen = 0.0, list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        total += stats[pid][1]
        todo += children.get(pid, [])
    return total


def service_processes(redis_url: str, database_url: str | None) -> dict[str, list[int]]:
    """The service's processes by kind, as far as this machine shows them: the web and worker
    processes scripts/bench.sh names (BENCH_WEB_PIDS, BENCH_WORKER_PIDS, BENCH_BEAT_PIDS: space
    separated), the Redis server (its INFO) and the PostgreSQL server (its postmaster.pid)."""
    groups: dict[str, list[int]] = {}
    for kind in ("web", "worker", "beat"):
        pids = [int(p) for p in os.environ.get(f"BENCH_{kind.upper()}_PIDS", "").split()]
        if pids:
            groups[kind] = pids
    try:
        import redis

        groups["redis"] = [int(redis.Redis.from_url(redis_url).info("server")["process_id"])]
    except Exception:  # another host, or no access: not measured
        pass
    if database_url:
        try:
            import psycopg

            with psycopg.connect(database_url, autocommit=True) as conn:
                data = conn.execute("SHOW data_directory").fetchone()[0]
            groups["postgresql"] = [int(Path(data, "postmaster.pid").read_text().split()[0])]
        except Exception:  # another host, or no access to the data directory: not measured
            pass
    return groups


class ServiceCpu:
    """CPU of the service's processes (service_processes) over a measured phase, by kind; with
    `redis_url`, also Redis's own time by command (INFO commandstats, whose counts include the
    commands run inside scripts), as the difference over the phase (no RESETSTAT: nothing else of
    Redis's statistics is touched)."""

    def __init__(
        self, groups: dict[str, list[int]], redis_url: str | None = None, database_url: str | None = None
    ) -> None:
        self.groups = groups
        self.phases: dict[str, dict[str, float]] = {}
        self.redis_url = redis_url
        self.commands: dict[str, dict[str, tuple[int, int]]] = {}  # phase -> command -> (calls, usec)
        self.database_url = database_url
        self.tables: dict[str, dict[str, tuple[int, ...]]] = {}  # phase -> table -> TABLE_COUNTERS
        self.ticks: dict[str, tuple[int, int, int]] = {}  # phase -> the machine's (busy, steal, total) ticks

    # pg_stat_user_tables' counters, per table (a partition's summed into its parent's)
    TABLE_COUNTERS = ("seq_scan", "seq_tup_read", "idx_scan", "idx_tup_fetch", "n_tup_ins", "n_tup_upd", "n_tup_del")

    def _tables_now(self) -> dict[str, tuple[int, ...]]:
        if self.database_url is None:
            return {}
        import psycopg

        counters = ", ".join(f"coalesce(s.{c}, 0)" for c in self.TABLE_COUNTERS)
        found: dict[str, list[int]] = {}
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            rows = conn.execute(
                f"SELECT coalesce(parent.relname, s.relname), {counters} FROM pg_stat_user_tables s "
                "LEFT JOIN pg_inherits i ON i.inhrelid = s.relid LEFT JOIN pg_class parent ON parent.oid = i.inhparent"
            )
            for table, *values in rows:
                held = found.setdefault(table, [0] * len(values))
                for i, value in enumerate(values):
                    held[i] += int(value)
        return {table: tuple(values) for table, values in found.items()}

    def _now(self) -> dict[str, float]:
        return {kind: tree_cpu_s(pids) for kind, pids in self.groups.items()}

    @staticmethod
    def _machine_now() -> tuple[int, int, int] | None:
        """The machine's CPU time so far (/proc/stat, ticks of all cores): busy, stolen, total. Stolen
        is time the hypervisor gave another guest while this one had work: a phase with more of it
        ran on less machine than the others. (On this VM the same phase's CPU per result moved by
        30-48% between runs with at most 1.1% stolen: the host slows it in ways this does not see.)"""
        try:
            with open("/proc/stat") as stat:
                user, nice, system, idle, iowait, irq, softirq, steal = map(int, stat.readline().split()[1:9])
        except (OSError, ValueError):
            return None
        busy = user + nice + system + irq + softirq
        return busy, steal, busy + idle + iowait + steal

    def _commands_now(self) -> dict[str, tuple[int, int]]:
        if self.redis_url is None:
            return {}
        import redis

        stats = redis.Redis.from_url(self.redis_url).info("commandstats")
        return {name.removeprefix("cmdstat_"): (int(v["calls"]), int(v["usec"])) for name, v in stats.items()}

    @property
    def machine(self) -> dict[str, tuple[float, float]]:
        """Per phase, the machine's (busy, stolen) shares of all its CPU time."""
        return {name: (busy / total, steal / total) for name, (busy, steal, total) in self.ticks.items() if total}

    @contextmanager
    def phase(self, name: str):
        """Measures the block as phase `name`; a name measured again adds up (interleaved blocks of
        one workload count as one phase)."""
        before, commands, tables = self._now(), self._commands_now(), self._tables_now()
        machine = self._machine_now()
        try:
            yield
        finally:
            after, commands_after, machine_after = self._now(), self._commands_now(), self._machine_now()
            held = self.phases.setdefault(name, dict.fromkeys(self.groups, 0.0))
            for kind in self.groups:
                held[kind] += after[kind] - before[kind]
            if machine is not None and machine_after is not None:
                ticks = self.ticks.get(name, (0, 0, 0))
                self.ticks[name] = tuple(t + a - b for t, a, b in zip(ticks, machine_after, machine, strict=True))
            if self.database_url is not None:
                time.sleep(1)  # the backends report their counters at most once a second
                tables_after = self._tables_now()
                held_tables = self.tables.setdefault(name, {})
                for table, values in tables_after.items():
                    spent = (a - b for a, b in zip(values, tables.get(table, (0,) * len(values)), strict=True))
                    earlier = held_tables.get(table, (0,) * len(values))
                    held_tables[table] = tuple(e + x for e, x in zip(earlier, spent, strict=True))
            if self.redis_url is not None:
                held_commands = self.commands.setdefault(name, {})
                for cmd, (calls, usec) in commands_after.items():
                    was_calls, was_usec = commands.get(cmd, (0, 0))
                    if calls - was_calls:
                        earlier_calls, earlier_usec = held_commands.get(cmd, (0, 0))
                        held_commands[cmd] = (earlier_calls + calls - was_calls, earlier_usec + usec - was_usec)

    def tables_per(self, name: str, count: int, top: int = 8) -> str:
        """The tables with the most rows read (sequentially or by index) and inserted in the phase,
        each with its counters per one of `count`: `scoring_scoreevent seq 0.000 (0.0 rows) idx 1.00
        (1.0 rows) ins 1.00 upd 0.00 del 0.00`."""
        spent = sorted(self.tables.get(name, {}).items(), key=lambda item: -(item[1][1] + item[1][3] + item[1][4]))
        n = max(count, 1)
        parts = []
        for table, (seq, seq_rows, idx, idx_rows, ins, upd, dele) in spent[:top]:
            parts.append(
                f"{table} seq {seq / n:.3f} ({seq_rows / n:.1f} rows) idx {idx / n:.2f} ({idx_rows / n:.1f} rows)"
                f" ins {ins / n:.2f} upd {upd / n:.2f} del {dele / n:.2f}"
            )
        return "; ".join(parts)

    def commands_per(self, name: str, count: int, top: int = 10) -> str:
        """`evalsha 120.1 us (1.0 calls), zadd 40.2 us (10.3 calls), ...`: Redis's time and calls by
        command per one of `count`, the `top` costliest (scripts' time includes their commands')."""
        spent = sorted(self.commands.get(name, {}).items(), key=lambda item: -item[1][1])[:top]
        n = max(count, 1)
        return ", ".join(f"{cmd} {usec / n:.1f} us ({calls / n:.2f} calls)" for cmd, (calls, usec) in spent)

    def per(self, name: str, count: int, unit: str = "ms") -> str:
        """`web 0.81 ms, worker 0.20 ms, ...` per one of `count` (requests, events) in the phase."""
        spent = self.phases.get(name, {})
        scale = 1000 if unit == "ms" else 1e6
        parts = [f"{kind} {scale * cpu / max(count, 1):.3f} {unit}" for kind, cpu in spent.items()]
        shares = self.machine.get(name)
        if shares is not None:
            busy, steal = shares
            parts.append(f"(the machine {busy * 100:.0f}% busy, {steal * 100:.1f}% stolen by the host)")
        return ", ".join(parts) if parts else "(the service's processes are not visible from here)"
