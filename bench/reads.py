#!/usr/bin/env python3
"""Read benchmark: rank, top and around against a RUNNING service, plus the raw Redis round trip.

    .venv/bin/python bench/reads.py --url http://127.0.0.1:8000 [--seconds 10] [--workers 16]

Seeds a fresh game with --players players (signed batch API, one result each), waits until the
`all` board holds them all, then for each endpoint runs a closed loop of --workers concurrent
keep-alive connections for --seconds, and (unless --open-rate 0) an open loop at a fixed offered
rate (latency measured from each request's scheduled start, so queueing counts). The client is a
minimal HTTP/1.1 keep-alive client on asyncio streams: on a 2-core machine shared with the server,
httpx costs several times more client CPU per request and would measure the client.
"""

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    log,
    match,
    now_iso,
    percentile,
    player_id,
    provision,
    redis_url,
    region_of,
    signed_headers,
)


# --------------------------------------------------------------------------- seeding
def seed(args, game: str, key_id: str, secret: str) -> int:
    """One result per player (matches of two), then wait until the `all` board holds them all."""
    rng = random.Random(3)
    path = f"/api/v1/games/{game}/matches/batch"
    played_at = now_iso(ceil=True)
    n = args.players
    with httpx.Client(base_url=args.url, timeout=300) as client:
        matches = []
        for a in range(1, n + 1, 2):
            pair = [a, a + 1] if a + 1 <= n else [a]
            matches.append(match(played_at, [(player_id(p), rng.randint(0, 10_000), region_of(p)) for p in pair]))
        for start in range(0, len(matches), 1000):
            body = json.dumps({"matches": matches[start : start + 1000]}, separators=(",", ":")).encode()
            r = client.post(path, content=body, headers=signed_headers(key_id, secret, path, body))
            r.raise_for_status()
            bad = [m for m in r.json()["matches"] if m["http_status"] != 202]
            if bad:
                raise RuntimeError(f"seeding refused: {bad[:2]}")
        t = time.perf_counter()
        while True:
            r = client.get(f"/api/v1/games/{game}/boards/all/players/{player_id(1)}")
            total = r.json().get("total") if r.status_code == 200 else 0
            if total == n:
                break
            if time.perf_counter() - t > args.seed_timeout:
                raise RuntimeError(f"board holds {total} of {n} players after {args.seed_timeout} s")
            time.sleep(0.05)
        season = client.get(f"/api/v1/games/{game}").json()["current_season"]
    log(f"seeded {n} players on game {game} (season {season})")
    return season


# --------------------------------------------------------------------------- a small HTTP/1.1 client
class Conn:
    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def get(self, path: str) -> tuple[int, bytes]:
        if self.writer is None:
            await self._open()
        assert self.reader is not None and self.writer is not None
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length, chunked, close = 0, False, False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif name == b"connection" and b"close" in value.lower():
                close = True
        if chunked:
            body = b""
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                body += await self.reader.readexactly(size + 2)
                if size == 0:
                    break
        else:
            body = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Result:
    def __init__(self, name: str):
        self.name = name
        self.lat: list[float] = []
        self.errors: dict[int, int] = {}
        self.elapsed = 0.0
        self.offered: float | None = None
        self.late_sends = 0
        self.gave_up_after_s: float | None = None
        self.unsent = 0

    @property
    def rps(self) -> float:
        return len(self.lat) / self.elapsed if self.elapsed else 0.0

    def p(self, q: float) -> float:
        return percentile(self.lat, q) * 1000

    def line(self) -> str:
        err = f", errors {self.errors}" if self.errors else ""
        off = f" offered {self.offered:.0f}/s," if self.offered else ""
        return (
            f"{self.name:>8}:{off} {self.rps:7.0f} req/s  p50 {self.p(50):6.1f} ms  p99 {self.p(99):6.1f} ms  "
            f"max {self.p(100):6.1f} ms  ({len(self.lat)} requests{err})"
        )


def make_paths(game: str, players: int, rng: random.Random):
    base = f"/api/v1/games/{game}/boards/all"
    return {
        "rank": lambda: f"{base}/players/{player_id(rng.randint(1, players))}",
        "top": lambda: f"{base}/top?n=100",
        "around": lambda: f"{base}/players/{player_id(rng.randint(1, players))}/around?r=5",
    }


async def closed_loop(host: str, port: int, name: str, path_of, workers: int, seconds: float) -> Result:
    res = Result(name)
    conns = [Conn(host, port) for _ in range(workers)]
    for c in conns:  # connect and warm up outside the measured window
        await c.get(path_of())
    deadline = time.perf_counter() + seconds

    async def worker(conn: Conn) -> None:
        while True:
            t = time.perf_counter()
            if t >= deadline:
                return
            status, _ = await conn.get(path_of())
            done = time.perf_counter()
            if status == 200:
                res.lat.append(done - t)
            else:
                res.errors[status] = res.errors.get(status, 0) + 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    res.elapsed = time.perf_counter() - t0
    for c in conns:
        c.close()
    return res


async def open_loop(
    host: str, port: int, name: str, path_of, rate: float, seconds: float, max_conns: int, give_up_s: float
) -> Result:
    """Requests start on a fixed schedule (rate per second) whatever the answers do; latency is
    measured from the scheduled start, so time spent waiting for a free connection counts. When the
    schedule runs more than `give_up_s` late (all connections busy), the run stops: the offered rate
    is beyond capacity and the latency only grows from there."""
    res = Result(name)
    res.offered = rate
    idle: list[Conn] = [Conn(host, port) for _ in range(min(64, max_conns))]
    for c in idle:
        await c.get(path_of())
    opened = len(idle)
    freed = asyncio.Condition()
    tasks: set[asyncio.Task] = set()

    async def one(conn: Conn, scheduled: float) -> None:
        status, _ = await conn.get(path_of())
        done = time.perf_counter()
        if status == 200:
            res.lat.append(done - scheduled)
        else:
            res.errors[status] = res.errors.get(status, 0) + 1
        async with freed:
            idle.append(conn)
            freed.notify()

    total = int(rate * seconds)
    t0 = time.perf_counter()
    for i in range(total):
        scheduled = t0 + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        elif delay < -0.005:
            res.late_sends += 1
            if -delay > give_up_s:  # the service cannot keep up: stop instead of queueing for minutes
                res.gave_up_after_s = time.perf_counter() - t0
                res.unsent = total - i
                break
        async with freed:
            if not idle and opened < max_conns:
                idle.append(Conn(host, port))
                opened += 1
            while not idle:
                await freed.wait()
            conn = idle.pop()
        task = asyncio.create_task(one(conn, scheduled))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await asyncio.gather(*tasks)
    res.elapsed = time.perf_counter() - t0
    for c in idle:
        c.close()
    return res


def raw_redis(args, game: str, season: int) -> dict:
    """Round trip of single ZREVRANK / ZSCORE calls from Python (redis-py, hiredis) on the same Redis."""
    r = redis.Redis.from_url(redis_url(args.redis_url), decode_responses=True)
    key = f"{args.key_prefix}:b:{game}:{season}:all:global:-"
    if not r.exists(key):
        raise RuntimeError(f"board key {key} not found (REDIS_KEY_PREFIX?)")
    rng = random.Random(5)
    rank_lat, score_lat = [], []
    for _ in range(1000):  # warm up
        r.zscore(key, player_id(rng.randint(1, args.players)))
    for _ in range(args.raw_calls):
        pid = player_id(rng.randint(1, args.players))
        t = time.perf_counter()
        r.zrevrank(key, pid)
        t1 = time.perf_counter()
        r.zscore(key, pid)
        t2 = time.perf_counter()
        rank_lat.append(t1 - t)
        score_lat.append(t2 - t1)
    r.close()
    both = rank_lat + score_lat
    return {
        "p50_ms": percentile(both, 50) * 1000,
        "p99_ms": percentile(both, 99) * 1000,
        "zrevrank_p99_ms": percentile(rank_lat, 99) * 1000,
        "zscore_p99_ms": percentile(score_lat, 99) * 1000,
        "calls": len(both),
    }


async def run_http(args, game: str) -> tuple[dict[str, Result], list[Result]]:
    parts = urlsplit(args.url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    rng = random.Random(11)
    paths = make_paths(game, args.players, rng)
    closed: dict[str, Result] = {}
    if args.baseline:  # the floor of the web stack: a view that touches neither database nor Redis
        base = await closed_loop(host, port, "live", lambda: "/health/live", args.workers, min(args.seconds, 5))
        log(base.line() + "  (GET /health/live: no DB, no Redis)")
    for name in ("rank", "top", "around"):
        closed[name] = await closed_loop(host, port, name, paths[name], args.workers, args.seconds)
        log(closed[name].line())
    opened: list[Result] = []
    names = list(paths)

    def mixed() -> str:
        return paths[names[rng.randrange(3)]]()

    capacity = min(r.rps for r in closed.values())
    for rate in args.open_rates:
        rate = rate if rate > 0 else round(capacity / 2 / 10) * 10  # "half": half the closed-loop capacity
        res = await open_loop(host, port, "mixed", mixed, rate, args.seconds, args.max_conns, args.open_give_up_s)
        gave_up = (
            f"; GAVE UP after {res.gave_up_after_s:.1f} s ({res.unsent} requests unsent): over capacity"
            if res.gave_up_after_s is not None
            else ""
        )
        log(res.line() + f"  late sends {res.late_sends}{gave_up}")
        opened.append(res)
    return closed, opened


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--game")
    parser.add_argument("--key-id")
    parser.add_argument("--secret")
    parser.add_argument("--no-seed", action="store_true", help="the game's board already holds --players players")
    parser.add_argument("--players", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--workers", type=int, default=8, help="concurrent connections in the closed loops")
    parser.add_argument(
        "--open-rate",
        default="2000,half",
        help="offered req/s of the open loops, comma-separated; `half`: half the closed-loop capacity; 0 for none",
    )
    parser.add_argument("--max-conns", type=int, default=256, help="connection cap of the open loop")
    parser.add_argument("--open-give-up-s", type=float, default=3.0, help="stop the open loop when sends run this late")
    parser.add_argument("--redis-url", help="default: $REDIS_URL or redis://127.0.0.1:6379/0")
    parser.add_argument("--key-prefix", default="lb", help="the service's REDIS_KEY_PREFIX")
    parser.add_argument("--raw-calls", type=int, default=10_000)
    parser.add_argument(
        "--baseline", action=argparse.BooleanOptionalAction, default=True, help="also load GET /health/live"
    )
    parser.add_argument("--seed-timeout", type=float, default=300)
    parser.add_argument("--json", help="also write all figures to this file")
    args = parser.parse_args()
    args.url = args.url.rstrip("/")
    args.open_rates = [-1.0 if x == "half" else float(x) for x in args.open_rate.split(",") if x and x != "0"]

    game, key_id, secret = provision(args.game, args.key_id, args.secret, "reads")
    log(f"load average before the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    if args.no_seed:
        season = httpx.get(f"{args.url}/api/v1/games/{game}").json()["current_season"]
    else:
        season = seed(args, game, key_id, secret)
    closed, opened = asyncio.run(run_http(args, game))
    raw = raw_redis(args, game, season)
    log(f"raw redis: p50 {raw['p50_ms']:.3f} ms p99 {raw['p99_ms']:.3f} ms ({raw['calls']} calls)")
    for res in opened:
        gave_up = res.gave_up_after_s is not None
        ok = not gave_up and res.p(99) < 50 and res.rps >= 0.98 * (res.offered or 0)
        p99 = (
            f"p99 > {args.open_give_up_s * 1000:.0f} ms (gave up: over capacity)"
            if gave_up
            else f"p99 {res.p(99):.0f} ms"
        )
        target = f": {'meets' if ok else 'misses'} the target (p99 < 50 ms at 2K req/s)" if res.offered == 2000 else ""
        print(
            f"reads open loop: offered {res.offered:.0f} req/s (rank/top/around mixed), achieved "
            f"{res.rps:.0f} req/s, p50 {res.p(50):.0f} ms, {p99}{target}",
            flush=True,
        )
    if args.json:
        out = {
            name: {"rps": r.rps, "p50_ms": r.p(50), "p99_ms": r.p(99), "errors": r.errors} for name, r in closed.items()
        }
        out["open_loop"] = [
            {
                "offered": r.offered,
                "gave_up_after_s": r.gave_up_after_s,
                "rps": r.rps,
                "p50_ms": r.p(50),
                "p99_ms": r.p(99),
                "errors": r.errors,
            }
            for r in opened
        ]
        out["raw_redis"] = raw
        Path(args.json).write_text(json.dumps(out, indent=2))
    c = closed
    print(
        f"reads: rank {c['rank'].rps:.0f} req/s p99 {c['rank'].p(99):.0f} ms, "
        f"top {c['top'].rps:.0f} req/s p99 {c['top'].p(99):.0f} ms, "
        f"around {c['around'].rps:.0f} req/s p99 {c['around'].p(99):.0f} ms, raw redis p99 {raw['p99_ms']:.1f} ms",
        flush=True,
    )


if __name__ == "__main__":
    main()
