#!/usr/bin/env python3
"""Read benchmark: rank, around and top against a RUNNING service, every other public GET beside
them, the floor of a Python ASGI server for a rank read, the raw Redis limit of a rank read, and an
open loop at 2,000 reads/s alone and under 5,000 events/s of batch ingest.

    .venv/bin/python bench/reads.py --url http://127.0.0.1:8000 [--players 100000] [--workers 64]
        [--seconds 10] [--open-rate 2000] [--open-seconds 30] [--ingest-rate 5000] [--json PATH]
    (reuse a seeded game: --no-seed --game GAME --key-id KEY --secret SECRET)

Seeds a fresh game with --players players (signed batch API, one result each; skipped with
--no-seed), waits until the `all` board holds them all, then measures, on that board, with player ids
drawn at random over the whole board:

  A. closed loop: --workers keep-alive connections, each endpoint alone for --seconds: rank
     (GET .../boards/all/players/{id}), top (.../boards/all/top?n=100), around
     (.../players/{id}/around?r=5): req/s, p50, p99, errors (any non-200 or connection failure).
  R. with --tiers (default): percent tiers put on the `all` board (signed PUT), the three reads of A
     again, each as a share of its figure in A (target: within 10%); the tiers removed after.
  T. with --tournament (default; the seed's matches all name a tournament made before it): the
     tournament period board's player, top and around reads, closed loop as in A, each as a share
     of the board read it mirrors (target: the same cost).
  E. every other public GET (the list of games, the board page alone, with ?player=, on the weekly tab; the game; its
     seasons; the distribution), closed loop as in A, each beside the top read's req/s (target:
     at least 0.7 of it); then all of them alike in an open loop at half the top read's rate for
     --open-seconds (target: every p99 < 100 ms, no errors).
  F. the floor: bench/floor.py (a bare ASGI app answering a player's rank with one EVALSHA and
     orjson) on as many processes of leaderboard_site/serve.py as the web (WEB_CONCURRENCY, at
     WEB_NICE), the rank read of A against it: each hot read's share of it (target: 0.7).
  B. the raw limit: the Lua the service runs for a rank read (boards/lua/ranking_lib.lua +
     player.lua, joined by "\\n", read at run time), called with EVALSHA straight on Redis, no Django,
     from --raw-clients (default --workers) concurrent redis.asyncio clients in this process for
     --seconds: rank reads/s and p99. ARGV is [player, 2**time_bits, the game's tie rule
     (`competition` for a seeded game), 10000 exact ranks, 100 buckets], cut to as many as
     player.lua's header comment documents (falling back to 5, then 3, on a Lua error); time_bits is
     computed as the service does, from the current season's window plus grace read from
     .../seasons (90 days + 3600 s by default; --time-bits overrides). One answer is checked against
     the service's own for the same player.
  C. open loop: --open-rate reads/s offered for --open-seconds, mixed rank 50%, around 25%,
     top 25%; latency measured from each request's scheduled start (waiting for a free connection
     counts); p50/p99 and errors per endpoint; target: every p99 < 20 ms and no errors.
  D. the same open loop while bench/_ingest_load.py (a child process) POSTs signed batches of
     --ingest-batch one-result matches (random players of the same board, so it keeps its size) to
     .../matches/batch from --ingest-senders threads, paced to --ingest-rate results/s, from the
     moment the loop starts until it ends; the achieved ingest rate and batches not answered 200
     are reported; target: every read p99 < 50 ms and no errors. --ingest-rate 0 skips it.

This script is the load generator and runs on the same machine as the service: it reports the CPU
it used in the measured phases (user + sys of itself and of its child, getrusage) against their
wall time. The HTTP client is a minimal HTTP/1.1 keep-alive client on asyncio streams (`Conn`, in
_common.py): httpx costs several times more client CPU per request and would measure the client.

Output: progress and per-phase details on stderr; on stdout the load generator's CPU, one line per
open loop phase and, last, the summary (figures from phases A and B; ratio = rank req/s / raw):
    reads: rank 2600 req/s p99 12 ms, top 1900 req/s p99 20 ms, around 2100 req/s p99 15 ms, raw 9800/s, ratio 0.27
"""

import argparse
import asyncio
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import redis.asyncio
import redis.exceptions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    ROOT,
    Conn,
    CpuMeter,
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
from django.test import override_settings

from boards import keys as service_keys
from leaderboard_site.settings.env import key_prefix_from_env

KINDS = ("rank", "top", "around")
LUA_DIR = ROOT / "boards" / "lua"
INGEST_SCRIPT = Path(__file__).resolve().parent / "_ingest_load.py"
DEFAULT_SEASON_DAYS = 90  # seasons.services.DEFAULT_SEASON_DAYS
DEFAULT_GRACE_S = 3600  # seasons.services.DEFAULT_GRACE_S
EXACT_RANKS = 10_000  # boards.selectors.EXACT_RANKS
BUCKETS = 100  # boards.selectors.DISTRIBUTION_BUCKETS
OPEN_TARGET_MS = 20.0
INGEST_TARGET_MS = 50.0


# --------------------------------------------------------------------------- seeding
TOURNAMENT = "bench-cup"
T_KINDS = {"t_rank": "rank", "t_top": "top", "t_around": "around"}  # tournament read -> its board read


TIERS = {"by": "percent", "tiers": [{"name": "diamond", "cutoff": 1}, {"name": "gold", "cutoff": 10}, {"name": "rest"}]}


def tiers_set(args, game: str, key_id: str, secret: str, body: dict | None) -> None:
    """PUT (or with None, DELETE) the `all` board's tiers, signed."""
    path = f"/api/v1/games/{game}/boards/all/tiers"
    raw = json.dumps(body).encode() if body is not None else b""
    method = "PUT" if body is not None else "DELETE"
    headers = signed_headers(key_id, secret, path, raw, method=method)
    httpx.request(method, args.url + path, content=raw, headers=headers, timeout=30).raise_for_status()


def tournament_create(args, game: str, key_id: str, secret: str) -> None:
    """A tournament every seeded match names (phase T): started a minute ago, a day long, best
    score, no entry or limits, so its period board holds the seeded players as the `all` board does."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=60)
    body = json.dumps(
        {"title": "Bench Cup", "starts_at": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "duration_s": 86400}
    ).encode()
    path = f"/api/v1/games/{game}/tournaments/{TOURNAMENT}"
    answer = httpx.put(
        args.url + path, content=body, headers=signed_headers(key_id, secret, path, body, method="PUT"), timeout=30
    )
    answer.raise_for_status()


def seed(args, game: str, key_id: str, secret: str) -> int:
    """One result per player (matches of two), then wait until the `all` board holds them all.
    With --tournament, every match names the bench's tournament."""
    rng = random.Random(3)
    path = f"/api/v1/games/{game}/matches/batch"
    played_at = now_iso(ceil=True)
    n = args.players
    points: dict[int, int] = {}
    with httpx.Client(base_url=args.url, timeout=300) as client:
        matches = []
        for a in range(1, n + 1, 2):
            pair = [a, a + 1] if a + 1 <= n else [a]
            points.update({p: rng.randint(0, 10_000) for p in pair})
            matches.append(match(played_at, [(player_id(p), points[p], region_of(p)) for p in pair]))
            if args.tournament:
                matches[-1]["tournaments"] = [TOURNAMENT]
        # The anomaly job (on, as shipped; every minute) withholds the cohort's highest scores for
        # review, during the seeding or any minute after it: the reads leave the 100 highest out (a
        # read of a withheld one is a correct 404 `not_ranked`, not a failure of the service).
        WITHHELD.update(sorted(points, key=lambda p: -points[p])[:100])
        for start in range(0, len(matches), 1000):
            body = json.dumps({"matches": matches[start : start + 1000]}, separators=(",", ":")).encode()
            r = client.post(path, content=body, headers=signed_headers(key_id, secret, path, body))
            r.raise_for_status()
            bad = [m for m in r.json()["matches"] if m["http_status"] != 202]
            if bad:
                raise RuntimeError(f"seeding refused: {bad[:2]}")
        t = time.perf_counter()
        last, steady_since = -1, time.perf_counter()
        while True:
            r = client.get(f"/api/v1/games/{game}/boards/all/players/{player_id(1)}")
            total = r.json().get("total") if r.status_code == 200 else 0
            if total != last:
                last, steady_since = total, time.perf_counter()
            if total == n:
                break
            # The anomaly job (on, as shipped) withholds the cohort's top 0.01% for review: a board
            # that stays a few short of n for 3 s is complete.
            if total >= n * 0.999 and time.perf_counter() - steady_since > 3:
                log(f"{n - total} of {n} seeded results withheld for review by the anomaly job")
                break
            if time.perf_counter() - t > args.seed_timeout:
                raise RuntimeError(f"board holds {total} of {n} players after {args.seed_timeout} s")
            time.sleep(0.05)
        season = client.get(f"/api/v1/games/{game}").json()["current_season"]
    log(f"seeded {n} players on game {game} (season {season})")
    return season


def time_bits_of(window_s: int) -> int:
    """seasons.services.time_bits_for_window: bits for every whole second of the window plus grace."""
    return max(1, int(window_s).bit_length())


def board_info(args, game: str) -> dict:
    """The current season, the game's tie rule, the season's time bits, and the service's own answer
    for player 1 (to check the raw Lua call of phase B against)."""
    with httpx.Client(base_url=args.url, timeout=30) as client:
        r = client.get(f"/api/v1/games/{game}")
        r.raise_for_status()
        detail = r.json()
        season = detail["current_season"]
        tie_rule = detail.get("tie_rule") or "competition"
        if args.time_bits:
            time_bits, how = args.time_bits, "--time-bits"
        else:
            window_s, how = DEFAULT_SEASON_DAYS * 86400 + DEFAULT_GRACE_S, "the default 90-day season"
            try:
                listing = client.get(f"/api/v1/games/{game}/seasons").json()
                row = next(s for s in listing["seasons"] if str(s["id"]) == str(season))
                starts = datetime.fromisoformat(row["starts_at"].replace("Z", "+00:00"))
                ends = datetime.fromisoformat(row["ends_at"].replace("Z", "+00:00"))
                window_s, how = int((ends - starts).total_seconds()) + int(row["grace_s"]), f"season {season}'s window"
            except (httpx.HTTPError, ValueError, KeyError, StopIteration, TypeError) as exc:
                log(f"could not read season {season}'s window ({exc!r}): assuming {how}")
            time_bits = time_bits_of(window_s)
        r = client.get(f"/api/v1/games/{game}/boards/all/players/{player_id(1)}")
        reference = r.json() if r.status_code == 200 else None
    log(f"game {game}: season {season}, tie rule {tie_rule}, time_bits {time_bits} (from {how})")
    return {"season": season, "tie_rule": tie_rule, "time_bits": time_bits, "reference": reference}


# --------------------------------------------------------------------------- the HTTP client (_common.Conn)
ERROR_SAMPLES: dict[str, str] = {}  # status -> "path -> body" of the first such answer


async def fetch(conn: Conn, path: str) -> int | str:
    """The status of one GET, or the name of the exception that broke the connection (then closed:
    the next GET opens a new one)."""
    try:
        status, body = await conn.get(path)
        if status != 200 and str(status) not in ERROR_SAMPLES:  # the first of each kind, reported at the end
            ERROR_SAMPLES[str(status)] = f"{path} -> {body[:300].decode(errors='replace')}"
        return status
    except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
        conn.close()
        return type(exc).__name__


# --------------------------------------------------------------------------- figures
class Result:
    def __init__(self, name: str):
        self.name = name
        self.lat: list[float] = []
        self.errors: dict[str, int] = {}
        self.elapsed = 0.0

    def ok(self, latency: float) -> None:
        self.lat.append(latency)

    def error(self, status: int | str) -> None:
        self.errors[str(status)] = self.errors.get(str(status), 0) + 1

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def rps(self) -> float:
        return len(self.lat) / self.elapsed if self.elapsed else 0.0

    def p(self, q: float) -> float:
        return percentile(self.lat, q) * 1000

    def line(self) -> str:
        err = f", errors {self.errors}" if self.errors else ", no errors"
        return (
            f"{self.name:>8}: {self.rps:7.0f} /s  p50 {self.p(50):6.1f} ms  p99 {self.p(99):6.1f} ms  "
            f"max {self.p(100):6.1f} ms  ({len(self.lat)} ok{err})"
        )

    def figures(self) -> dict:
        return {
            "rps": self.rps,
            "p50_ms": self.p(50),
            "p99_ms": self.p(99),
            "max_ms": self.p(100),
            "ok": len(self.lat),
            "errors": self.errors,
            "elapsed_s": self.elapsed,
        }


class OpenRun:
    """One open loop: the offered rate and, per endpoint kind, the latencies from scheduled starts."""

    def __init__(self, rate: float, seconds: float, give_up_s: float, kinds: tuple[str, ...] = KINDS):
        self.offered = rate
        self.seconds = seconds
        self.give_up_s = give_up_s
        self.kinds = kinds
        self.by_kind = {kind: Result(kind) for kind in kinds}
        self.sent = 0
        self.late_sends = 0
        self.gave_up_after_s: float | None = None
        self.unsent = 0
        self.elapsed = 0.0

    @property
    def errors(self) -> int:
        return sum(r.error_count for r in self.by_kind.values())

    @property
    def achieved(self) -> float:
        return sum(len(r.lat) for r in self.by_kind.values()) / self.elapsed if self.elapsed else 0.0

    def verdict(self, target_ms: float) -> tuple[bool, str]:
        """(met, why not): every endpoint's p99 under the target, no errors, the schedule kept."""
        slow = [k for k, r in self.by_kind.items() if not r.p(99) < target_ms]  # nan (no answers) is slow
        why = [f"{', '.join(slow)} p99"] if slow else []
        if self.errors:
            why.append(f"{self.errors} errors")
        if self.gave_up_after_s is not None:
            why.append("over capacity")
        return not why, "; ".join(why)

    def line(self, label: str, target_ms: float) -> str:
        met, why = self.verdict(target_ms)
        gave_up = (
            f"GAVE UP after {self.gave_up_after_s:.1f} s (sends over {self.give_up_s:g} s late, {self.unsent} unsent), "
            if self.gave_up_after_s is not None
            else ""
        )
        p99s = ", ".join(f"{k} p99 {self.by_kind[k].p(99):.0f} ms" for k in self.kinds)
        verdict = "met" if met else f"missed: {why}"
        return f"{label}: {gave_up}{p99s}, errors {self.errors} (target p99 < {target_ms:.0f} ms: {verdict})"

    def figures(self, target_ms: float) -> dict:
        met, why = self.verdict(target_ms)
        return {
            "offered_rps": self.offered,
            "seconds": self.seconds,
            "achieved_rps": self.achieved,
            "sent": self.sent,
            "late_sends": self.late_sends,
            "gave_up_after_s": self.gave_up_after_s,
            "unsent": self.unsent,
            "errors": self.errors,
            "target_p99_ms": target_ms,
            "target_met": met,
            "target_missed_by": why or None,
            **{kind: r.figures() for kind, r in self.by_kind.items()},
        }


# --------------------------------------------------------------------------- load
WITHHELD: set[int] = set()  # seeded players the reads leave out (seed)


def ranked_player(rng: random.Random, players: int) -> int:
    """A seeded player on the board: drawn at random, again while it is one left out."""
    while True:
        p = rng.randint(1, players)
        if p not in WITHHELD:
            return p


def make_paths(game: str, players: int, rng: random.Random):
    base = f"/api/v1/games/{game}/boards/all"
    return {
        "rank": lambda: f"{base}/players/{player_id(ranked_player(rng, players))}",
        "top": lambda: f"{base}/top?n=100",
        "around": lambda: f"{base}/players/{player_id(ranked_player(rng, players))}/around?r=5",
    }


async def closed_loop(host: str, port: int, name: str, path_of, workers: int, seconds: float) -> Result:
    res = Result(name)
    conns = [Conn(host, port) for _ in range(workers)]
    await asyncio.gather(*(fetch(c, path_of()) for c in conns))  # connect and warm up, not measured
    deadline = time.perf_counter() + seconds

    async def worker(conn: Conn) -> None:
        while True:
            t = time.perf_counter()
            if t >= deadline:
                return
            status = await fetch(conn, path_of())
            if status == 200:
                res.ok(time.perf_counter() - t)
            else:
                res.error(status)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    res.elapsed = time.perf_counter() - t0
    for c in conns:
        c.close()
    return res


async def open_loop(
    host: str,
    port: int,
    pick,
    rate: float,
    seconds: float,
    max_conns: int,
    give_up_s: float,
    on_start=None,
    kinds: tuple[str, ...] = KINDS,
) -> OpenRun:
    """Requests start on a fixed schedule (`rate` per second) whatever the answers do; `pick()` gives
    (kind, path). Latency is measured from the scheduled start, so waiting for a free connection
    counts. When the schedule runs more than `give_up_s` late (all connections busy), the run stops:
    the offered rate is beyond capacity and the latency only grows from there. `on_start()` is
    called just before the schedule starts (after the connections are open)."""
    run = OpenRun(rate, seconds, give_up_s, kinds)
    idle: list[Conn] = [Conn(host, port) for _ in range(min(64, max_conns))]
    await asyncio.gather(*(fetch(c, pick()[1]) for c in idle))
    opened = len(idle)
    freed = asyncio.Condition()
    tasks: set[asyncio.Task] = set()

    async def one(conn: Conn, kind: str, path: str, scheduled: float) -> None:
        status = await fetch(conn, path)
        res = run.by_kind[kind]
        if status == 200:
            res.ok(time.perf_counter() - scheduled)
        else:
            res.error(status)
        async with freed:
            idle.append(conn)
            freed.notify()

    total = int(rate * seconds)
    if on_start is not None:
        on_start()
    t0 = time.perf_counter()
    for i in range(total):
        scheduled = t0 + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        elif delay < -0.005:
            run.late_sends += 1
            if -delay > give_up_s:  # the service cannot keep up: stop instead of queueing for minutes
                run.gave_up_after_s = time.perf_counter() - t0
                run.unsent = total - i
                break
        async with freed:
            if not idle and opened < max_conns:
                idle.append(Conn(host, port))
                opened += 1
            while not idle:
                await freed.wait()
            conn = idle.pop()
        kind, path = pick()
        task = asyncio.create_task(one(conn, kind, path, scheduled))
        run.sent += 1
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await asyncio.gather(*tasks)
    run.elapsed = time.perf_counter() - t0
    for kind in run.kinds:
        run.by_kind[kind].elapsed = run.elapsed
    for c in idle:
        c.close()
    return run


# --------------------------------------------------------------------------- phase B: the raw limit
def argv_documented(source: str) -> int | None:
    """How many ARGV the script's header comment (its leading `--` lines) documents."""
    header = []
    for line in source.splitlines():
        if not line.startswith("--"):
            break
        header.append(line)
    found = [int(n) for n in re.findall(r"ARGV\[(\d+)\]", "\n".join(header))]
    return max(found) if found else None


def player_keys(prefix: str, game: str, season: int) -> list[str]:
    """player.lua's KEYS on the game's `all` board, under the service's prefix (boards/keys.py)."""
    with override_settings(REDIS_KEY_PREFIX=prefix):
        board = service_keys.BoardRef(game, season, "all")
        return [board.key, board.distinct_key, service_keys.names_key(game)]


async def raw_lua(args, game: str, info: dict) -> dict:
    """player.lua (with ranking_lib.lua) by EVALSHA from concurrent redis.asyncio clients, no Django."""
    keys = player_keys(args.key_prefix, game, info["season"])
    board = keys[0]
    player_src = (LUA_DIR / "player.lua").read_text()
    source = "\n".join([(LUA_DIR / "ranking_lib.lua").read_text(), player_src])
    tail = [2 ** info["time_bits"], info["tie_rule"], EXACT_RANKS, BUCKETS]  # after the player id
    documented = argv_documented(player_src)
    tries = ([min(documented, 5)] if documented else []) + [n for n in (5, 3) if n != documented]
    clients = args.raw_clients or args.workers
    client = redis.asyncio.Redis.from_url(redis_url(args.redis_url))
    try:
        if not await client.exists(board):
            raise RuntimeError(f"board key {board} not found (--key-prefix? --redis-url?)")
        script = client.register_script(source)
        reply, argc, failures = None, 0, []
        for n in tries:  # one probe call: also loads the script (SCRIPT LOAD on NOSCRIPT)
            try:
                reply = await script(keys=keys, args=[player_id(1), *tail][:n])
                argc = n
                break
            except redis.exceptions.ResponseError as exc:
                failures.append(f"{n} ARGV: {exc}")
        if not argc:
            raise RuntimeError(f"player.lua failed: {'; '.join(failures)}")
        log(
            f"raw: player.lua documents {documented} ARGV, called with {argc}"
            + (f" (after: {'; '.join(failures)})" if failures else "")
        )
        if not reply:
            raise RuntimeError(f"player.lua finds no {player_id(1)} on {board}: wrong board key?")
        ref = info["reference"]

        def differs(reply, ref) -> bool:
            return ref is not None and (int(reply[0]), int(reply[1])) != (ref.get("score"), ref.get("rank"))

        if differs(reply, ref):
            # The board may have changed since the reference was read (the anomaly job holds back
            # a few seeded results for review): ask the service again, and the script again, now.
            async with httpx.AsyncClient(base_url=args.url, timeout=30) as http:
                again = await http.get(f"/api/v1/games/{game}/boards/all/players/{player_id(1)}")
            ref = again.json() if again.status_code == 200 else None
            reply = await script(keys=keys, args=[player_id(1), *tail][:argc])
        if differs(reply, ref):
            log(
                f"WARNING: raw player.lua answers points {reply[0]} rank {reply[1]} for {player_id(1)}, the "
                f"service score {ref.get('score')} rank {ref.get('rank')} at the same moment: wrong --time-bits?"
            )
        args_tail = tail[: argc - 1]
        rng = random.Random(7)
        n = args.players
        res = Result("raw rank")
        await asyncio.gather(
            *(script(keys=keys, args=[player_id(rng.randint(1, n)), *args_tail]) for _ in range(clients))
        )  # opens the connections
        deadline = time.perf_counter() + args.seconds

        async def worker() -> None:
            while True:
                t = time.perf_counter()
                if t >= deadline:
                    return
                try:
                    await script(keys=keys, args=[player_id(rng.randint(1, n)), *args_tail])
                except (redis.exceptions.RedisError, OSError) as exc:
                    res.error(type(exc).__name__)
                    continue
                res.ok(time.perf_counter() - t)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        res.elapsed = time.perf_counter() - t0
    finally:
        await client.aclose()
    return {**res.figures(), "clients": clients, "argv": argc, "argv_documented": documented, "line": res.line()}


# --------------------------------------------------------------------------- phase D: the ingest process
class IngestChild:
    """bench/_ingest_load.py in its own process: started (and ready) before the loop, `go` when the
    loop starts, `stop` when it ends; its figures come back as one JSON line."""

    def __init__(self, args, game: str, key_id: str, secret: str):
        cmd = [
            sys.executable,
            str(INGEST_SCRIPT),
            *("--url", args.url, "--game", game, "--key-id", key_id, "--secret", secret),
            *("--players", str(args.players), "--rate", str(args.ingest_rate)),
            *("--batch", str(args.ingest_batch), "--senders", str(args.ingest_senders)),
        ]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        if self.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError("the ingest process did not start (its error is above)")

    def go(self) -> None:
        self.stdin.write("go\n")
        self.stdin.flush()

    def stop(self) -> dict:
        self.stdin.write("stop\n")
        self.stdin.flush()
        out = self.stdout.read()
        self.proc.wait()
        lines = out.strip().splitlines()
        if self.proc.returncode or not lines:
            raise RuntimeError(f"the ingest process failed (exit {self.proc.returncode})")
        return json.loads(lines[-1])

    def close(self) -> None:
        """End it if still running (its stdin closed: it stops; killed after 30 s) and reap it."""
        if self.proc.poll() is None:
            try:
                self.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --------------------------------------------------------------------------- phase E: every public GET
PUBLIC_GETS = ("home", "page", "page_player", "page_weekly", "game", "seasons", "distribution")
PUBLIC_TARGET_SHARE = 0.7  # of the top read's requests/s, each
PUBLIC_OPEN_TARGET_MS = 100  # p99 at half the top read's rate, open loop


def public_paths(game: str, players: int, rng: random.Random):
    api = f"/api/v1/games/{game}"
    return {
        "home": lambda: "/",
        "page": lambda: f"/games/{game}/",
        "page_player": lambda: f"/games/{game}/?player={player_id(ranked_player(rng, players))}",
        "page_weekly": lambda: f"/games/{game}/?board=weekly",
        "game": lambda: api,
        "seasons": lambda: f"{api}/seasons",
        "distribution": lambda: f"{api}/boards/all/distribution",
    }


async def public_gets(args, host: str, port: int, game: str, top: Result, rng: random.Random) -> dict:
    """Each public GET other than the hot three, closed loop as in phase A, beside the top read's
    figure; then all of them in an open loop at half the top read's rate."""
    paths = public_paths(game, args.players, rng)
    out: dict = {"closed": {}}
    for name in PUBLIC_GETS:
        res = await closed_loop(host, port, name, paths[name], args.workers, args.seconds)
        share = res.rps / top.rps if top.rps else float("nan")
        log(res.line() + f"  ({share:.2f} of top)")
        out["closed"][name] = {**res.figures(), "of_top": share}
    rate = top.rps / 2

    def mixed() -> tuple[str, str]:
        kind = PUBLIC_GETS[rng.randrange(len(PUBLIC_GETS))]
        return kind, paths[kind]()

    log(f"phase E open loop: every public GET alike, {rate:.0f}/s (half the top read's) for {args.open_seconds:g} s")
    run = await open_loop(
        host, port, mixed, rate, args.open_seconds, args.max_conns, args.open_give_up_s, kinds=PUBLIC_GETS
    )
    for kind in PUBLIC_GETS:
        log(run.by_kind[kind].line())
    out["open"] = run
    return out


# --------------------------------------------------------------------------- phase T: tournament reads
async def tournament_reads(args, host: str, port: int, game: str, board: dict, rng: random.Random) -> dict:
    """The tournament period board's player, top and around reads (the same players, n and r as
    phase A's), each as a share of its board read's req/s (the target: the same cost, 1.0)."""
    base = f"/api/v1/games/{game}/tournaments/{TOURNAMENT}"
    paths = {
        "t_rank": lambda: f"{base}/players/{player_id(ranked_player(rng, args.players))}",
        "t_top": lambda: f"{base}/top?n=100",
        "t_around": lambda: f"{base}/players/{player_id(ranked_player(rng, args.players))}/around?r=5",
    }
    found = {}
    for name, of in T_KINDS.items():
        res = await closed_loop(host, port, name, paths[name], args.workers, args.seconds)
        share = res.rps / board[of].rps if board[of].rps else float("nan")
        log(res.line() + f"  ({share:.2f} of the board's {of})")
        found[name] = {**res.figures(), "of_board": share}
    return found


# --------------------------------------------------------------------------- phase F: the floor
class FloorServers:
    """bench/floor.py's application on as many processes of leaderboard_site/serve.py as the
    service's web (WEB_CONCURRENCY, at WEB_NICE), on a free port, for the time of a with block."""

    def __init__(self, args, game: str, info: dict) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        env = {
            **os.environ,
            "FLOOR_GAME": game,
            "FLOOR_SEASON": str(info["season"]),
            "FLOOR_TIME_BITS": str(info["time_bits"]),
            "FLOOR_TIE_RULE": info["tie_rule"],
            "REDIS_KEY_PREFIX": args.key_prefix,
            "REDIS_URL": redis_url(args.redis_url),
            "PYTHONPATH": str(ROOT),
        }
        command = [sys.executable, "-m", "leaderboard_site.serve", "--port", str(self.port)]
        command += ["--app", "bench.floor:application"]
        nice = ["nice", "-n", os.environ.get("WEB_NICE", "10")]
        self.env, self.command = env, nice + command
        self.count = int(os.environ.get("WEB_CONCURRENCY", "2"))
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "FloorServers":
        for _ in range(self.count):
            self.procs.append(subprocess.Popen(self.command, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    time.sleep(1.0)  # the last processes' start-up
                    return self
            time.sleep(0.2)
        raise RuntimeError("the floor servers never listened")

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


# --------------------------------------------------------------------------- the run
async def run_all(args, game: str, key_id: str, secret: str, info: dict, meter: CpuMeter) -> dict:
    parts = urlsplit(args.url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    rng = random.Random(11)
    paths = make_paths(game, args.players, rng)
    out: dict = {}

    log(f"phase A: closed loop, {args.workers} connections, {args.seconds:g} s per endpoint")
    with meter.phase("A"):
        if args.baseline:  # the floor of the web stack: a view that touches neither database nor Redis
            base = await closed_loop(host, port, "live", lambda: "/health/live", args.workers, min(args.seconds, 5))
            log(base.line() + "  (GET /health/live: no DB, no Redis)")
            out["baseline_live"] = base.figures()
        closed = {}
        for name in KINDS:
            closed[name] = await closed_loop(host, port, name, paths[name], args.workers, args.seconds)
            log(closed[name].line())
    out["closed"] = closed
    if args.tiers:
        tiers_set(args, game, key_id, secret, TIERS)
        log(f"phase R: the hot reads again with percent tiers on the board ({TIERS['tiers']})")
        with meter.phase("R"):
            tiered = {}
            for name in KINDS:
                tiered[name] = await closed_loop(host, port, name, paths[name], args.workers, args.seconds)
                log(tiered[name].line() + f"  ({tiered[name].rps / closed[name].rps:.2f} of it without tiers)")
        tiers_set(args, game, key_id, secret, None)
        out["tiered"] = tiered
    if args.tournament:
        log(f"phase T: the tournament's reads, closed loop as in A, {args.workers} connections")
        with meter.phase("T"):
            out["tournament"] = await tournament_reads(args, host, port, game, closed, rng)

    log(f"phase E: every public GET, closed loop, {args.workers} connections, {args.seconds:g} s each")
    with meter.phase("E"):
        out["public"] = await public_gets(args, host, port, game, closed["top"], rng)

    log(f"phase F: the floor, bench/floor.py's rank read on the same server and processes, {args.seconds:g} s")
    with meter.phase("F"), FloorServers(args, game, info) as floor:
        out["floor"] = await closed_loop("127.0.0.1", floor.port, "floor", paths["rank"], args.workers, args.seconds)
        log(out["floor"].line())
        around = await closed_loop(
            "127.0.0.1", floor.port, "floor_around", lambda: paths["around"]().split("?")[0], args.workers, args.seconds
        )
        out["floor_around"] = around
    log(around.line())

    log(f"phase B: raw player.lua on Redis, {args.raw_clients or args.workers} clients, {args.seconds:g} s")
    with meter.phase("B"):
        out["raw"] = await raw_lua(args, game, info)
    log(out["raw"]["line"])

    def mixed() -> tuple[str, str]:
        x = rng.random()
        kind = "rank" if x < 0.5 else "around" if x < 0.75 else "top"
        return kind, paths[kind]()

    def open_phase(label: str, run: OpenRun) -> None:
        for kind in KINDS:
            log(run.by_kind[kind].line())
        log(
            f"{label}: offered {run.offered:.0f}/s, achieved {run.achieved:.0f}/s, {run.sent} sent, "
            f"late sends {run.late_sends}"
        )

    loop_args = (args.open_rate, args.open_seconds, args.max_conns, args.open_give_up_s)
    if args.open_rate > 0:
        mix = "rank 50%, around 25%, top 25%"
        log(f"phase C: open loop, {args.open_rate:g} reads/s ({mix}) for {args.open_seconds:g} s")
        with meter.phase("C"):
            out["open"] = await open_loop(host, port, mixed, *loop_args)
        open_phase("phase C", out["open"])
        if args.ingest_rate > 0:
            log(f"phase D: the same open loop + ingest {args.ingest_rate:g} results/s (child process)")
            with meter.phase("D"):
                child = IngestChild(args, game, key_id, secret)
                try:
                    out["open_ingest"] = await open_loop(host, port, mixed, *loop_args, on_start=child.go)
                    out["ingest"] = child.stop()
                finally:
                    child.close()
            open_phase("phase D", out["open_ingest"])
            ing = out["ingest"]
            log(
                f"phase D ingest: {ing['achieved_rate']:.0f} results/s accepted of {ing['offered_rate']:g} offered, "
                f"{ing['batches_sent']} batches ({ing['batches_not_200']} not 200: {ing['batch_errors']}), "
                f"batch p50 {ing['batch_p50_ms']:.0f} ms p99 {ing['batch_p99_ms']:.0f} ms, "
                f"results {ing['result_statuses']}"
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--game")
    parser.add_argument("--key-id")
    parser.add_argument("--secret")
    parser.add_argument("--no-seed", action="store_true", help="the game's board already holds --players players")
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=10, help="length of each closed loop and of the raw phase")
    parser.add_argument("--workers", type=int, default=64, help="concurrent connections of the closed loops")
    parser.add_argument("--raw-clients", type=int, help="concurrent Redis clients of the raw phase (default --workers)")
    parser.add_argument("--open-rate", type=float, default=2000, help="offered reads/s of the open loops; 0: none")
    parser.add_argument("--open-seconds", type=float, default=30)
    parser.add_argument("--max-conns", type=int, default=256, help="connection cap of the open loops")
    parser.add_argument("--open-give-up-s", type=float, default=3.0, help="stop an open loop when sends run this late")
    parser.add_argument("--ingest-rate", type=float, default=5000, help="results/s ingested in phase D; 0: no phase D")
    parser.add_argument("--ingest-batch", type=int, default=500, help="one-result matches per ingest batch")
    parser.add_argument("--ingest-senders", type=int, default=4, help="concurrent ingest senders")
    parser.add_argument("--time-bits", type=int, help="the season's time_bits (default: computed from the season)")
    parser.add_argument("--redis-url", help="default: $REDIS_URL or redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--key-prefix",
        default=key_prefix_from_env(),
        help="the service's REDIS_KEY_PREFIX (default: as the service derives it from the environment)",
    )
    parser.add_argument(
        "--baseline", action=argparse.BooleanOptionalAction, default=False, help="also load GET /health/live"
    )
    parser.add_argument("--seed-timeout", type=float, default=300)
    parser.add_argument(
        "--tiers",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="phase R: the hot reads again with percent tiers on the board (their cost: the same req/s)",
    )
    parser.add_argument(
        "--tournament",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="phase T: the seed's matches name a tournament, whose top, player and around reads are measured",
    )
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    args.url = args.url.rstrip("/")

    game, key_id, secret = provision(args.game, args.key_id, args.secret, "reads")
    log(f"load average before the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    if not args.no_seed:
        if args.tournament:
            tournament_create(args, game, key_id, secret)
        seed(args, game, key_id, secret)
    args.tournament = args.tournament and not args.no_seed
    info = board_info(args, game)

    meter = CpuMeter()
    out = asyncio.run(run_all(args, game, key_id, secret, info, meter))

    cpu = meter.totals()
    lines = [
        f"load generator: {cpu['cpu_s']:.1f} s CPU in {cpu['wall_s']:.0f} s "
        f"({cpu['share_of_one_core'] * 100:.0f}% of one core)"
    ]
    log(
        "load generator by phase: "
        + ", ".join(
            f"{name} {p['self_cpu_s']:.1f} s"
            + (f" + child {p['children_cpu_s']:.1f} s" if p["children_cpu_s"] else "")
            + f" in {p['wall_s']:.0f} s"
            for name, p in meter.phases.items()
        )
    )
    for status, sample in ERROR_SAMPLES.items():
        log(f"first {status} answer: {sample}")
    if "open" in out:
        lines.append(out["open"].line(f"reads open loop {args.open_rate:.0f}/s", OPEN_TARGET_MS))
    if "open_ingest" in out:
        ing = out["ingest"]
        label = (
            f"reads open loop {args.open_rate:.0f}/s + ingest {args.ingest_rate:.0f} events/s "
            f"(achieved {ing['achieved_rate']:.0f}/s, batches not 200: {ing['batches_not_200']})"
        )
        line = out["open_ingest"].line(label, INGEST_TARGET_MS)
        if ing["achieved_rate"] < 0.95 * args.ingest_rate:
            line += f"; ingest short of {args.ingest_rate:.0f}/s"
        lines.append(line)
    c, raw, floor = out["closed"], out["raw"], out["floor"]
    ratio = c["rank"].rps / raw["rps"] if raw["rps"] else float("nan")
    lines.append(
        f"reads: rank {c['rank'].rps:.0f} req/s p99 {c['rank'].p(99):.0f} ms, "
        f"top {c['top'].rps:.0f} req/s p99 {c['top'].p(99):.0f} ms, "
        f"around {c['around'].rps:.0f} req/s p99 {c['around'].p(99):.0f} ms, "
        f"raw {raw['rps']:.0f}/s, ratio {ratio:.2f}"
    )
    if "tiered" in out:
        lines.append(
            "reads with percent tiers, of the same read without: "
            + ", ".join(f"{name} {out['tiered'][name].rps / c[name].rps:.2f}" for name in KINDS)
        )
    if "tournament" in out:
        t = out["tournament"]
        lines.append(
            "tournament reads, of the board's same read: "
            + ", ".join(f"{name} {t[name]['rps']:.0f} req/s = {t[name]['of_board']:.2f}" for name in T_KINDS)
        )
    public = out["public"]
    shares = ", ".join(f"{name} {public['closed'][name]['of_top']:.2f}" for name in PUBLIC_GETS)
    lines.append(
        f"every public GET, of the top read's {c['top'].rps:.0f} req/s (target {PUBLIC_TARGET_SHARE}): {shares}"
    )
    lines.append(
        public["open"].line(f"every public GET open loop {public['open'].offered:.0f}/s", PUBLIC_OPEN_TARGET_MS)
    )
    of_floor = {name: c[name].rps / floor.rps if floor.rps else float("nan") for name in KINDS}
    lines.append(
        f"floor (bench/floor.py, same server and processes): rank {floor.rps:.0f} req/s p99 {floor.p(99):.0f} ms; "
        + ", ".join(f"{name} {of_floor[name]:.2f} of it" for name in KINDS)
    )
    floor_around = out["floor_around"]
    around_share = c["around"].rps / floor_around.rps if floor_around.rps else float("nan")
    lines.append(
        f"floor of an around read (bench/floor.py's around.lua and orjson): {floor_around.rps:.0f} req/s; "
        f"the service's around {around_share:.2f} of it"
    )
    if args.json:
        figures = {
            "game": game,
            "season": info["season"],
            "time_bits": info["time_bits"],
            "tie_rule": info["tie_rule"],
            "config": {k: v for k, v in vars(args).items() if k not in ("secret", "key_id")},
            "closed": {name: r.figures() for name, r in c.items()},
            "raw": {k: v for k, v in raw.items() if k != "line"},
            "ratio": ratio,
            "floor": floor.figures(),
            "floor_around": out["floor_around"].figures(),
            "public": {"closed": public["closed"], "open": public["open"].figures(PUBLIC_OPEN_TARGET_MS)},
            "of_floor": of_floor,
            "load_generator": {**cpu, "phases": meter.phases},
            "lines": lines,
        }
        if "baseline_live" in out:
            figures["baseline_live"] = out["baseline_live"]
        if "open" in out:
            figures["open_loop"] = out["open"].figures(OPEN_TARGET_MS)
        if "open_ingest" in out:
            figures["open_loop_ingest"] = {**out["open_ingest"].figures(INGEST_TARGET_MS), "ingest": out["ingest"]}
        Path(args.json).write_text(json.dumps(figures, indent=2))
    for line in lines:
        print(line, flush=True)


if __name__ == "__main__":
    main()
