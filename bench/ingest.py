#!/usr/bin/env python3
"""Ingest benchmark: signed submissions against a RUNNING service (web, a Celery worker
and beat; scripts/bench.sh starts them), then the service's own board writer alone.

    .venv/bin/python bench/ingest.py --url http://127.0.0.1:8000 [--events 300000] [--players 1000000]
        [--offered-rate 10000] [--offered-seconds 20] [--single-connections 32] [--single-seconds 15]
        [--no-memory] [--json PATH] [--drift] [--blocks 2] [--redis-commands] [--pg-tables]
    (--redis-commands, --pg-tables: after each phase's service CPU, Redis's time by command and
    PostgreSQL's scans and rows by table, per accepted result)
    (reuse a game: --game GAME --key-id KEY --secret SECRET; without them a fresh game and server key
    are made with `manage.py create_game` / `create_server_key`)
    short run: --events 20000 --offered-seconds 3 --single-seconds 3 --no-memory
    (--offered-seconds 0 / --single-seconds 0 skip phases 2 / 3)

Workload: --players players (`p0000001`.., region from _common.region_of), signed batches of --batch
(500) matches of one result each: a uniform random player, points 0..1000, duration 600 s. One
server key; the anti-cheat runs as configured on the service (scripts/bench.sh: the shipped
defaults, only the key's request bucket raised). Results a bucket holds (`pending_review`) are
counted and reported, and only results answered `accepted` are expected on the boards.

Phases, in this order:
  1. max rate, closed loop: --senders (4) connections send --events results as fast as they are
     answered. Figures: end-to-end events/s = accepted results / (first request sent -> every
     accepted event on the boards, i.e. GET /health/ready says queue_lag_s == 0); the accept rate
     (accepted results/s while sending, and the share of results accepted); request p50/p99;
     counts per batch HTTP status, per match http_status and per result status; accept -> visible
     lag p50/p99: every --sample-every'th batch carries one unique sentinel player in its last
     match, and from the moment the batch's answer arrives a poller GETs
     /api/v1/games/{game}/boards/best/players/{sentinel} every ~20 ms until it answers 200; the
     exactness check: ~--verify players sampled from the workload (read before and after) must
     have gained exactly the sum of their results answered `accepted` on the `all` board.
  2. offered load, open loop: batches start on a fixed schedule, --offered-rate results/s
     (10,000 = 20 batches of 500 a second) for --offered-seconds, at most --offered-inflight (8)
     in flight; a batch due while all are in flight waits (it is late). Figures: the accept rate
     achieved, request p50/p99, lag p50/p99 (a sentinel in every --offered-sample-every'th
     batch), how far behind schedule the senders fell, and a verdict: kept up, or not (the
     schedule is abandoned when sends run --offered-give-up-s late).
  3. single-result signed POSTs: POST /api/v1/games/{game}/matches/{uuid}/results, one result per
     request, each body signed as it is sent; closed loop on --single-connections keep-alive
     connections for --single-seconds. Figures: requests/s, p50, p99, errors (any answer but 202).
  4. the raw limit: phase 1's accepted results through the service's own writer,
     boards.writer.events_apply, imported in this phase only (Django set up with
     DJANGO_SETTINGS_MODULE=leaderboard_site.settings.base and REDIS_KEY_PREFIX=benchraw<hex>, so
     no key is the service's), on the bench game's real season read from the database; one call
     per apply task as the worker makes them (each request's accepted events, in chunks of
     scoring.services.ENQUEUE_CHUNK, chunk=settings.SCORING_APPLY_CHUNK), with event ids from
     10**12 up, from this one process, timed. Every key under the private prefix is then deleted
     (SCAN). Figure: raw events/s (the writer's time only: no ledger reads or writes).
  5. with --memory (default): Redis bytes per board member and per dedup marker (1,000,000 each).
  6. with --tournament (default): a tournament is created (PUT, best score, no limits) and two
     workloads of --events results are sent, interleaved as 8's below: T, every match naming it;
     N, the same naming none. Figures: events/s end-to-end of each, their ratio to phase 4's raw,
     and T's share of N's (the contract: at least 0.8); the tournament board's exactness for
     --verify sampled players (their best accepted result in T). 7: N's workload once more, alone,
     right after (the reference the league's workloads are also set against).
  8. with --league (default, after 7): a league is created (PUT, cohorts of 30, sum, 4 divisions,
     its first period opened a minute ago) and two workloads of --events results each are sent,
     interleaved in --blocks (2) blocks each, ABBA (L B B L L B ...), the boards caught up
     after each block: L, phase 1's workload played now, every result counting in the league's
     period (nearly every one its player's first of the period: seated in Lua before the 202); B,
     other players' results played a minute before that period opened (the season's boards only).
     Same game, history, ledger and machine: B lacks exactly the league's work per result, and a
     machine whose speed moves over minutes moves both alike. 9: the same again, L's players now
     seated. Figures: events/s end-to-end of each workload (its accepted results over the sum of its
     blocks' times), L's share of B's (the contract: at least 0.8) and of phase 7's; the seated
     players and cohorts against L's accepted players, and --verify sampled players' cohort scores
     (the sum of their L results in both phases).
  7b. with --drift (after 7, before 8): phase 7 once more, naming none: the share of phase 7 it
     gets is what --events more results in the boards and ledger cost a phase by themselves.
Between phases the script waits until the boards have caught up (queue_lag_s == 0).

This script is the load generator and runs on the same machine as the service: per phase it
reports its own CPU (user + sys of this process, all threads, and of waited-for children;
getrusage) as a share of one core. HTTP goes through _common.Conn, a minimal HTTP/1.1 keep-alive
client on asyncio streams (httpx would cost several times the client CPU).

Output: progress and details on stderr; on stdout each phase's figures, its load generator CPU
and, last, the summary (N and lag from phase 1, R from phase 4, ratio N/R):
    ingest: 5000 events/s end-to-end, raw 40000 events/s, ratio 0.12, lag p99 900 ms
    tournaments: ... 0.93 of the same run's ratio without tournaments (...); ...
    leagues: ... 0.90 of the same run's ratio without one; ...
Exit status 1 when the exactness check finds a wrong total.
"""

import argparse
import asyncio
import json
import os
import random
import secrets
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    Conn,
    CpuMeter,
    ServiceCpu,
    log,
    match,
    now_iso,
    percentile,
    player_id,
    provision,
    redis_url,
    region_of,
    service_processes,
    signed_headers,
)

# The service's settings, for its key functions (the same as raw_limit's Django).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")
from django.test import override_settings

from boards import keys
from common.redis import broker_key, deployment_keys_drop

# The broker's list of scoring.tasks.APPLY_QUEUE ("scoring"), the Celery queue of the apply tasks,
# under the service's key prefix (the settings read from the same environment as the service's).
APPLY_QUEUE = broker_key("scoring")
MAX_POINTS = 1000
DURATION_S = 600
CONN_ERRORS = (OSError, EOFError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError)

Result = tuple[str, int, str]  # (player, points, region)


# --------------------------------------------------------------------------- workload
@dataclass
class Batch:
    results: list[Result]  # one per match, in order
    body: bytes
    sentinel: str | None
    played_at: str
    accepted: list[Result] = field(default_factory=list)  # filled in from the answer


def batches_make(
    *,
    rng: random.Random,
    events: int,
    size: int,
    players: int,
    sample_every: int,
    tag: str,
    tournament: str | None = None,
    played_at: str | None = None,
) -> list[Batch]:
    """`events` results in batches of `size` one-result matches; every `sample_every`'th batch (0:
    none) has a unique sentinel player in its last match. `tournament`: every match names it;
    `played_at`: every match's (default: now)."""
    played_at = played_at or now_iso(ceil=True)
    batches = []
    for b, start in enumerate(range(0, events, size)):
        results = []
        for _ in range(min(size, events - start)):
            n = rng.randrange(1, players + 1)
            results.append((player_id(n), rng.randint(0, MAX_POINTS), region_of(n)))
        sentinel = f"s-{tag}-{b}" if sample_every and b % sample_every == 0 else None
        if sentinel is not None:
            results[-1] = (sentinel, 1, "eu")
        matches = [match(played_at, [r]) for r in results]  # duration_s 600
        if tournament is not None:
            for one in matches:
                one["tournaments"] = [tournament]
        body = json.dumps({"matches": matches}, separators=(",", ":")).encode()
        batches.append(Batch(results, body, sentinel, played_at))
    return batches


def workload(args, rng: random.Random, tag: str, **extra) -> list[Batch]:
    """--events results of the --players players in batches of --batch, a sentinel in every
    --sample-every'th batch (`batches_make`; `extra`: its tournament or played_at)."""
    return batches_make(
        rng=rng,
        events=args.events,
        size=args.batch,
        players=args.players,
        sample_every=args.sample_every,
        tag=tag,
        **extra,
    )


class Tally:
    """What the answers said: batch HTTP statuses, per-match http_status, per-result status."""

    def __init__(self) -> None:
        self.batches: Counter[str] = Counter()
        self.matches: Counter[str] = Counter()
        self.results: Counter[str] = Counter()
        self.latencies: list[float] = []
        self.sent = 0
        self.accepted = 0
        self.last_answer = 0.0

    def record(self, batch: Batch, status: int | str, content: bytes, latency: float, done: float) -> None:
        """Counts one batch's answer and keeps its accepted results in `batch.accepted`."""
        self.batches[str(status)] += 1
        self.sent += len(batch.results)
        self.last_answer = max(self.last_answer, done)
        if status != 200:
            self.results[f"batch_{status}"] += len(batch.results)
            return
        self.latencies.append(latency)
        answers = json.loads(content)["matches"]
        for result, answer in zip(batch.results, answers, strict=True):
            code = answer.get("http_status")
            self.matches[str(code)] += 1
            if code != 202:
                self.results[f"match_{code}"] += 1
                continue
            [outcome] = answer["results"]
            reason = outcome.get("reason")
            self.results[outcome["status"] + (f":{reason}" if reason else "")] += 1
            if outcome["status"] == "accepted":
                batch.accepted.append(result)
        self.accepted += len(batch.accepted)

    def figures(self) -> dict:
        return {
            "results_sent": self.sent,
            "results_accepted": self.accepted,
            "accepted_share": self.accepted / self.sent if self.sent else float("nan"),
            "batch_statuses": dict(self.batches),
            "match_statuses": dict(self.matches),
            "result_statuses": dict(self.results),
            "request_p50_ms": percentile(self.latencies, 50) * 1000,
            "request_p99_ms": percentile(self.latencies, 99) * 1000,
        }


# --------------------------------------------------------------------------- talking to the service
class Service:
    def __init__(self, args, game: str, key_id: str, secret: str):
        parts = urlsplit(args.url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.game, self.key_id, self.secret = game, key_id, secret
        self.timeout = args.timeout
        self.redis_url = redis_url(args.redis_url)
        self.batch_path = f"/api/v1/games/{game}/matches/batch"

    def conn(self) -> Conn:
        return Conn(self.host, self.port)

    async def call(
        self, conn: Conn, method: str, path: str, body: bytes | None = None, headers: dict | None = None
    ) -> tuple[int | str, bytes]:
        """(status, body), or (the exception's name, b"") when the connection broke (it is closed:
        the next call opens a new one)."""
        try:
            return await asyncio.wait_for(conn.request(method, path, body, headers), self.timeout)
        except (TimeoutError, *CONN_ERRORS) as exc:
            conn.close()
            return type(exc).__name__, b""

    async def post_signed(self, conn: Conn, path: str, body: bytes) -> tuple[int | str, bytes]:
        return await self.call(conn, "POST", path, body, signed_headers(self.key_id, self.secret, path, body))

    async def send_batch(self, conn: Conn, batch: Batch, tally: Tally, poller: "LagPoller | None") -> None:
        t = time.perf_counter()
        status, content = await self.post_signed(conn, self.batch_path, batch.body)
        done = time.perf_counter()
        try:
            tally.record(batch, status, content, done - t, done)
        except (ValueError, KeyError, TypeError) as exc:  # a 200 we cannot read counts as broken
            tally.batches[f"bad_answer:{type(exc).__name__}"] += 1
            batch.accepted.clear()
        if poller is not None and batch.sentinel is not None and batch.accepted[-1:] == batch.results[-1:]:
            poller.add(batch.sentinel, done)

    async def board_score(self, conn: Conn, board: str, pid: str) -> int | None:
        """The player's score on a board of the current season; None when not on it (404). Waits
        out a 429 (the read bucket of this address)."""
        path = f"/api/v1/games/{self.game}/boards/{board}/players/{pid}"
        for _ in range(50):
            status, content = await self.call(conn, "GET", path)
            if status == 200:
                return int(json.loads(content)["score"])
            if status == 404:
                return None
            await asyncio.sleep(0.2)
        raise RuntimeError(f"GET {path}: {status} {content[:200]!r}")

    async def drained(self, *, timeout: float, label: str) -> tuple[float, float]:
        """Polls /health/ready until queue_lag_s == 0 (every accepted event on the boards, for the
        whole service). Returns (that moment, the highest queue_lag_s seen)."""
        conn = self.conn()
        broker = redis.Redis.from_url(self.redis_url)
        deadline = time.perf_counter() + timeout
        queued, queued_since, max_lag, lag = -1, time.perf_counter(), 0.0, None
        try:
            while True:
                status, content = await self.call(conn, "GET", "/health/ready")
                if status == 200:
                    lag = json.loads(content).get("queue_lag_s")
                    if lag == 0:
                        return time.perf_counter(), max_lag
                    max_lag = max(max_lag, lag or 0.0)
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"{label}: queue_lag_s still {lag} after {timeout:g} s (ready: {status})")
                now_queued = broker.llen(APPLY_QUEUE)
                if now_queued != queued or now_queued == 0:
                    queued, queued_since = now_queued, time.perf_counter()
                elif time.perf_counter() - queued_since > 60:
                    raise RuntimeError(f"{queued} apply tasks queued, none taken for 60 s: is a worker running?")
                await asyncio.sleep(0.02)
        finally:
            conn.close()
            broker.close()


class LagPoller:
    """Accept -> visible: from the arrival of a batch's answer, GETs .../boards/best/players/{sentinel}
    for each accepted sentinel until it answers 200; the lag runs to the arrival of that 200. A
    sentinel is polled every `interval` s, or every `relative` of its age once older (a backlog on
    the boards must not turn the poller into a read load), on `conns` connections."""

    def __init__(self, svc: Service, conns: int = 2, interval: float = 0.02, relative: float = 0.05):
        self.svc, self.interval, self.relative = svc, interval, relative
        self.conns = [svc.conn() for _ in range(conns)]
        self.pending: dict[str, float] = {}
        self.next_poll: dict[str, float] = {}
        self.lags: list[float] = []
        self.polls = 0
        self.errors: Counter[str] = Counter()
        self.lost = 0
        self.give_up_at: float | None = None
        self.task: asyncio.Task | None = None

    def add(self, sentinel: str, t_answer: float) -> None:
        self.pending[sentinel] = t_answer

    def start(self) -> None:
        self.task = asyncio.create_task(self._run())

    async def finish(self, grace_s: float = 10) -> None:
        """Stop once every pending sentinel is seen, or `grace_s` from now (then counted lost)."""
        self.give_up_at = time.perf_counter() + grace_s
        assert self.task is not None
        await self.task

    async def _poll(self, conn: Conn, items: list[tuple[str, float]]) -> None:
        for sentinel, t_answer in items:
            path = f"/api/v1/games/{self.svc.game}/boards/best/players/{sentinel}"
            status, _ = await self.svc.call(conn, "GET", path)
            self.polls += 1
            if status == 200:
                self.lags.append(time.perf_counter() - t_answer)
                del self.pending[sentinel]
                del self.next_poll[sentinel]
            elif status != 404:
                self.errors[str(status)] += 1

    async def _run(self) -> None:
        try:
            while True:
                cycle = time.perf_counter()
                if self.give_up_at is not None and (not self.pending or cycle > self.give_up_at):
                    self.lost = len(self.pending)
                    return
                due = [(s, t) for s, t in self.pending.items() if self.next_poll.get(s, 0.0) <= cycle]
                for sentinel, t_answer in due:
                    self.next_poll[sentinel] = cycle + max(self.interval, self.relative * (cycle - t_answer))
                n = len(self.conns)
                await asyncio.gather(*(self._poll(c, due[k::n]) for k, c in enumerate(self.conns)))
                await asyncio.sleep(max(0.0, self.interval - (time.perf_counter() - cycle)))
        finally:
            for c in self.conns:
                c.close()

    def figures(self) -> dict:
        ms = [x * 1000 for x in self.lags]
        return {
            "lag_samples": len(ms),
            "lag_p50_ms": percentile(ms, 50),
            "lag_p99_ms": percentile(ms, 99),
            "lag_max_ms": percentile(ms, 100),
            "lag_lost": self.lost,
            "lag_polls": self.polls,
            "lag_poll_errors": dict(self.errors),
        }


async def progress(label: str, tally: Tally, total: int, quiet: bool) -> None:
    if quiet:
        return
    t0 = time.perf_counter()
    while True:
        await asyncio.sleep(5)
        log(
            f"  {label}: {tally.sent}/{total} results answered, {tally.accepted} accepted, "
            f"{time.perf_counter() - t0:.0f} s"
        )


# --------------------------------------------------------------------------- phase 1: max rate
async def max_rate(args, svc: Service, batches: list[Batch], label: str = "phase 1", verify: int | None = None) -> dict:
    """`verify`: players sampled for the exactness check (default --verify). The figures keep the
    request latencies and lags themselves too (`latencies_s`, `lags_s`), for blocks summed up."""
    total = sum(len(b.results) for b in batches)
    counted = sorted({pid for b in batches for pid, _, _ in b.results if b.sentinel != pid})
    sample = random.Random(1).sample(counted, min(args.verify if verify is None else verify, len(counted)))
    conn = svc.conn()
    before = {pid: await svc.board_score(conn, "all", pid) or 0 for pid in sample}  # 0 on a fresh game

    tally = Tally()
    poller = LagPoller(svc)
    poller.start()
    shown = asyncio.create_task(progress(label, tally, total, args.quiet))
    order = iter(batches)  # the senders take the batches in turn

    async def sender() -> None:
        c = svc.conn()
        for batch in order:
            await svc.send_batch(c, batch, tally, poller)
        c.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(args.senders)))
    t_sent = time.perf_counter()
    shown.cancel()
    log(f"{label}: all {len(batches)} batches answered in {t_sent - t0:.2f} s; waiting for the boards ...")
    t_end, max_queue_lag = await svc.drained(timeout=args.drain_timeout, label=label)
    await poller.finish()

    expected = Counter()
    for batch in batches:
        for pid, pts, _ in batch.accepted:
            expected[pid] += pts
    wrong = []
    for pid in sample:  # not timed
        got = (await svc.board_score(conn, "all", pid) or 0) - before[pid]
        if got != expected[pid]:
            wrong.append({"player": pid, "expected": expected[pid], "got": got})
    conn.close()
    elapsed = t_end - t0
    return {
        "results": total,
        "batches": len(batches),
        "senders": args.senders,
        "send_s": t_sent - t0,
        "elapsed_s": elapsed,
        "drain_after_send_s": t_end - t_sent,
        "max_queue_lag_s": max_queue_lag,
        "eps": tally.accepted / elapsed,
        "accept_eps": tally.accepted / (t_sent - t0),
        **tally.figures(),
        **poller.figures(),
        "verified": len(sample),
        "mismatches": len(wrong),
        "mismatch_examples": wrong[:10],
        "latencies_s": tally.latencies,
        "lags_s": poller.lags,
    }


# --------------------------------------------------------------------------- phase 2: offered load
async def offered(args, svc: Service, batches: list[Batch]) -> dict:
    rate, inflight = args.offered_rate, args.offered_inflight
    interval = args.batch / rate
    idle: asyncio.Queue[Conn] = asyncio.Queue()
    for _ in range(inflight):
        c = svc.conn()
        await svc.call(c, "GET", "/health/live")  # connected before the schedule starts
        idle.put_nowait(c)
    tally = Tally()
    poller = LagPoller(svc)
    poller.start()
    from_schedule: list[float] = []
    late: list[float] = []
    tasks: set[asyncio.Task] = set()
    gave_up_after: float | None = None

    async def one(conn: Conn, batch: Batch, scheduled: float) -> None:
        try:
            await svc.send_batch(conn, batch, tally, poller)
            from_schedule.append(time.perf_counter() - scheduled)
        finally:
            idle.put_nowait(conn)

    t0 = time.perf_counter()
    for i, batch in enumerate(batches):
        scheduled = t0 + i * interval
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        conn = await idle.get()
        behind = time.perf_counter() - scheduled
        late.append(behind)
        if behind > args.offered_give_up_s:  # the service cannot take it: stop rather than queue for minutes
            gave_up_after = time.perf_counter() - t0
            idle.put_nowait(conn)
            break
        task = asyncio.create_task(one(conn, batch, scheduled))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await asyncio.gather(*tasks)
    t_sent = time.perf_counter()
    while not idle.empty():
        idle.get_nowait().close()
    t_end, max_queue_lag = await svc.drained(timeout=args.drain_timeout, label="phase 2")
    await poller.finish()

    sent = len(from_schedule)
    # Each batch stands for one interval of the schedule: a run that keeps to it is not credited
    # with its last batch early.
    elapsed = max(tally.last_answer - t0, sent * interval) if sent else float("nan")
    achieved = tally.accepted / elapsed if sent else 0.0
    max_behind = max(late, default=0.0)
    kept_up = gave_up_after is None and achieved >= 0.95 * rate and max_behind < 1.0
    return {
        "offered_rate": rate,
        "seconds": args.offered_seconds,
        "inflight": inflight,
        "batches_due": len(batches),
        "batches_sent": sent,
        "gave_up_after_s": gave_up_after,
        "elapsed_s": elapsed,
        "achieved_accept_rate": achieved,
        "behind_schedule_max_s": max_behind,
        "behind_schedule_last_s": late[-1] if late else 0.0,
        "late_sends": sum(1 for x in late if x > 0.005),
        "from_schedule_p99_ms": percentile(from_schedule, 99) * 1000,
        "drain_after_send_s": t_end - t_sent,
        "max_queue_lag_s": max_queue_lag,
        "kept_up": kept_up,
        **tally.figures(),
        **poller.figures(),
    }


# --------------------------------------------------------------------------- phase 3: single results
async def singles(args, svc: Service) -> dict:
    rng = random.Random(args.seed + 3)
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    conns = [svc.conn() for _ in range(args.single_connections)]
    await asyncio.gather(*(svc.call(c, "GET", "/health/live") for c in conns))  # connect, not measured
    deadline = time.perf_counter() + args.single_seconds

    async def worker(conn: Conn) -> None:
        while True:
            n = rng.randrange(1, args.players + 1)
            pid = player_id(n)
            body = json.dumps(
                {
                    "played_at": now_iso(),
                    "duration_s": DURATION_S,
                    "results": [
                        {
                            "player_id": pid,
                            "points": rng.randint(0, MAX_POINTS),
                            "display_name": pid.upper(),
                            "region": region_of(n),
                        }
                    ],
                },
                separators=(",", ":"),
            ).encode()
            path = f"/api/v1/games/{svc.game}/matches/{uuid.uuid4()}/results"
            t = time.perf_counter()
            if t >= deadline:
                return
            status, content = await svc.post_signed(conn, path, body)
            if status == 202:
                latencies.append(time.perf_counter() - t)
                outcomes[json.loads(content)["results"][0]["status"]] += 1
            else:
                errors[str(status)] += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.perf_counter() - t0
    for c in conns:
        c.close()
    t_end, _ = await svc.drained(timeout=args.drain_timeout, label="phase 3")
    return {
        "connections": args.single_connections,
        "elapsed_s": elapsed,
        "rps": len(latencies) / elapsed,
        "ok": len(latencies),
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "errors": sum(errors.values()),
        "error_statuses": dict(errors),
        "result_statuses": dict(outcomes),
        "drain_after_s": t_end - t0 - elapsed,
    }


# --------------------------------------------------------------------------- phase 4: the raw limit
def raw_limit(args, game: str, batches: list[Batch]) -> dict:
    """Phase 1's accepted results through boards.writer.events_apply, called as the worker calls
    it, on keys under a private prefix (deleted afterwards)."""
    prefix = f"benchraw{secrets.token_hex(4)}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connections

    # The settings were read when this module imported leaderboard_site (its Celery app reads the
    # beat schedule's intervals): the private prefix and the Redis go in as overrides, which
    # common.redis and boards.keys read at each call.
    override_settings(REDIS_KEY_PREFIX=prefix, REDIS_URL=redis_url(args.redis_url)).enable()

    from boards.writer import EventRow, events_apply
    from scoring.services import ENQUEUE_CHUNK
    from seasons.selectors import game_get, season_containing, seasons_of

    if settings.REDIS_KEY_PREFIX != prefix:
        raise RuntimeError(f"the settings use key prefix {settings.REDIS_KEY_PREFIX!r}, not {prefix!r}")
    found = game_get(slug=game)
    if found is None:
        raise RuntimeError(f"game {game} not in the database")
    played_at = datetime.fromisoformat(batches[0].played_at.replace("Z", "+00:00"))
    season = season_containing(seasons=seasons_of(game=found), played_at=played_at)
    if season is None:
        raise RuntimeError(f"game {game} has no season containing {played_at}")

    accepted_at = datetime.now(UTC)
    tasks: list[list[EventRow]] = []  # one per apply task: a request's accepted events, in chunks
    event_id = 10**12
    for batch in batches:
        for start in range(0, len(batch.accepted), ENQUEUE_CHUNK):
            rows = []
            for pid, pts, region in batch.accepted[start : start + ENQUEUE_CHUNK]:
                rows.append(
                    EventRow(
                        id=event_id,
                        season_id=season.id,
                        player_id=pid,
                        points=pts,
                        accepted_at=accepted_at,
                        day=played_at.date(),
                        region=region,
                    )
                )
                event_id += 1
            tasks.append(rows)
    n = sum(len(t) for t in tasks)
    applied = skipped = 0
    t0 = time.perf_counter()
    for rows in tasks:
        report = events_apply(events=rows, dedup_ttl_s=settings.SCORING_DEDUP_TTL_S, chunk=settings.SCORING_APPLY_CHUNK)
        applied += report.applied
        skipped += report.skipped + report.paused + report.overflow
    elapsed = time.perf_counter() - t0

    deleted = deployment_keys_drop()  # every key under the private prefix (the overridden settings')
    left = deployment_keys_drop()  # a second pass finds none unless the first missed some
    connections.close_all()
    if applied != n:
        log(f"phase 4: the writer applied {applied} of {n} events ({skipped} skipped, paused or overflowing)")
    if left:
        log(f"phase 4: WARNING: {left} keys under {prefix}: were left by the first pass")
    return {
        "events": n,
        "applied": applied,
        "calls": len(tasks),
        "apply_chunk": settings.SCORING_APPLY_CHUNK,
        "enqueue_chunk": ENQUEUE_CHUNK,
        "season": season.id,
        "elapsed_s": elapsed,
        "eps": n / elapsed if elapsed else float("nan"),
        "key_prefix": prefix,
        "keys_deleted": deleted,
        "keys_left": left,
    }


# --------------------------------------------------------------------------- phase 5: memory
def memory(args) -> dict:
    r = redis.Redis.from_url(redis_url(args.redis_url))
    prefix = f"benchmem{random.randrange(1 << 30):x}"
    n = args.memory_members
    rng = random.Random(7)
    with override_settings(REDIS_KEY_PREFIX=prefix):
        zkey = keys.BoardRef("bench", 1, "all").key
    dedup_ttl = 6 * 3600  # settings.SCORING_DEDUP_TTL_S

    def used() -> int:
        """used_memory once Redis has no lazy frees pending: the raw phase UNLINKs its keys, and
        Redis frees them in the background, which would otherwise shrink the delta measured here."""
        deadline = time.monotonic() + 60
        while int(r.info("memory").get("lazyfree_pending_objects", 0)) and time.monotonic() < deadline:
            time.sleep(0.05)
        return int(r.info("memory")["used_memory"])

    before = used()
    for start in range(1, n + 1, 10_000):
        mapping = {player_id(i): rng.randrange(1 << 39, 1 << 41) for i in range(start, min(n, start + 9_999) + 1)}
        r.zadd(zkey, mapping)
    after_zset = used()
    zusage = int(r.memory_usage(zkey, samples=0))
    zenc = r.object("encoding", zkey)

    base_id = 40_000_000  # realistic event ids, as a live ledger has
    before_dd = used()
    pipe = r.pipeline(transaction=False)
    markers = set()
    for i in range(n):
        eid = base_id + i
        key, dedup_field = keys.dedup_location(eid, prefix=prefix)
        # The value is the event's tag (boards.keys.dedup_tag): a signed 32-bit integer.
        pipe.hset(key, dedup_field, str(rng.randrange(-(1 << 31), 1 << 31)))
        markers.add(key)
        if len(pipe) >= 10_000:
            pipe.execute()
    for key in markers:
        pipe.expire(key, dedup_ttl)  # the service sets a TTL on every dedup hash
    pipe.execute()
    after_dd = used()
    sample_key = next(iter(markers))
    dd_usage = int(r.memory_usage(sample_key, samples=0))
    dd_enc = r.object("encoding", sample_key)
    r.delete(zkey)
    ordered = list(markers)
    for start in range(0, len(ordered), 1000):
        r.delete(*ordered[start : start + 1000])
    r.close()
    return {
        "members": n,
        "zset_bytes_per_member": (after_zset - before) / n,
        "zset_memory_usage_per_member": zusage / n,
        "zset_encoding": zenc.decode() if isinstance(zenc, bytes) else zenc,
        "dedup_bytes_per_marker": (after_dd - before_dd) / n,
        "dedup_hashes": len(markers),
        "dedup_hash_memory_usage": dd_usage,
        "dedup_encoding": dd_enc.decode() if isinstance(dd_enc, bytes) else dd_enc,
    }


# --------------------------------------------------------------------------- output
def out(line: str) -> None:
    print(line, flush=True)


def statuses(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"


def cpu_line(label: str, p: dict) -> str:
    cpu = p["self_cpu_s"] + p["children_cpu_s"]
    share = cpu / p["wall_s"] if p["wall_s"] else 0.0
    return f"{label} load generator: {cpu:.1f} s CPU in {p['wall_s']:.1f} s = {share * 100:.0f}% of one core"


def phase_details_out(args, phase: str, results: int) -> None:
    """With --redis-commands, Redis's time by command per accepted result in the phase; with
    --pg-tables, PostgreSQL's scans and rows by table."""
    if args.redis_commands:
        out(f"phase {phase} Redis per accepted result: {args.service_cpu.commands_per(phase, results)}")
    if args.pg_tables:
        out(f"phase {phase} PostgreSQL tables per accepted result: {args.service_cpu.tables_per(phase, results)}")


def lag_text(f: dict) -> str:
    lost = f", {f['lag_lost']} never seen" if f["lag_lost"] else ""
    errors = f", poll errors {f['lag_poll_errors']}" if f["lag_poll_errors"] else ""
    return f"lag p50 {f['lag_p50_ms']:.0f} ms p99 {f['lag_p99_ms']:.0f} ms ({f['lag_samples']} sentinels{lost}{errors})"


# --------------------------------------------------------------------------- main
async def http_phases(args, svc: Service, meter: CpuMeter, tag: str) -> tuple[dict, list[Batch]]:
    """Phases 1 to 3; returns their figures and phase 1's batches (for phase 4)."""
    figures: dict = {}
    rng = random.Random(args.seed)
    batches = workload(args, rng, f"{tag}-1")
    log(f"phase 1: max rate, {args.events} results in {len(batches)} batches of {args.batch}, {args.senders} senders")
    with meter.phase("1"), args.service_cpu.phase("1"):
        p1 = await max_rate(args, svc, batches)
    figures["max_rate"] = p1
    out(
        f"phase 1 max rate: {p1['eps']:.0f} events/s end-to-end ({p1['results_accepted']} accepted results, "
        f"first request -> all on the boards in {p1['elapsed_s']:.2f} s; boards caught up "
        f"{p1['drain_after_send_s']:.2f} s after the last answer)"
    )
    out(
        f"phase 1 max rate: accepted {p1['accept_eps']:.0f} results/s while sending "
        f"({p1['accepted_share'] * 100:.2f}% of {p1['results_sent']} accepted), request p50 "
        f"{p1['request_p50_ms']:.0f} ms p99 {p1['request_p99_ms']:.0f} ms; batches {statuses(p1['batch_statuses'])}; "
        f"results {statuses(p1['result_statuses'])}"
    )
    exact = (
        f"exact totals for {p1['verified']} sampled players on `all`"
        if not p1["mismatches"]
        else f"MISMATCH on {p1['mismatches']} of {p1['verified']} sampled players, e.g. {p1['mismatch_examples'][:3]}"
    )
    out(f"phase 1 max rate: {lag_text(p1)}; {exact}")
    out(cpu_line("phase 1", meter.phases["1"]))
    out(f"phase 1 service CPU per accepted result: {args.service_cpu.per('1', p1['results_accepted'], 'us')}")
    phase_details_out(args, "1", p1["results_accepted"])

    if args.offered_seconds > 0:
        if not args.offered_rate:  # a share of what the service just sustained
            args.offered_rate = round(args.offered_share * p1["eps"])
            log(f"phase 2: offering {args.offered_share:g} of phase 1's {p1['eps']:.0f} events/s end-to-end")
        due = max(1, round(args.offered_rate * args.offered_seconds / args.batch))
        batches2 = batches_make(
            rng=rng,
            events=due * args.batch,
            size=args.batch,
            players=args.players,
            sample_every=args.offered_sample_every,
            tag=f"{tag}-2",
        )
        log(
            f"phase 2: offered {args.offered_rate:g} results/s for {args.offered_seconds:g} s "
            f"({len(batches2)} batches of {args.batch}, at most {args.offered_inflight} in flight)"
        )
        with meter.phase("2"), args.service_cpu.phase("2"):
            p2 = await offered(args, svc, batches2)
        figures["offered"] = p2
        if p2["kept_up"]:
            verdict = "kept up"
        else:
            why = []
            if p2["gave_up_after_s"] is not None:
                why.append(
                    f"gave up after {p2['gave_up_after_s']:.1f} s "
                    f"({p2['batches_sent']} of {p2['batches_due']} batches sent)"
                )
            if p2["achieved_accept_rate"] < 0.95 * args.offered_rate:
                why.append(f"only {p2['achieved_accept_rate']:.0f} of {args.offered_rate:g} results/s accepted")
            if p2["behind_schedule_max_s"] >= 1.0:
                why.append(f"senders fell {p2['behind_schedule_max_s']:.1f} s behind schedule")
            verdict = f"the service did NOT keep up with {args.offered_rate:g} events/s: {'; '.join(why)}"
        out(
            f"phase 2 offered {args.offered_rate:g} events/s for {args.offered_seconds:g} s: "
            f"accepted {p2['achieved_accept_rate']:.0f} events/s ({p2['accepted_share'] * 100:.2f}% of results "
            f"accepted), request p50 {p2['request_p50_ms']:.0f} ms p99 {p2['request_p99_ms']:.0f} ms, "
            f"{lag_text(p2)}, behind schedule max {p2['behind_schedule_max_s']:.2f} s "
            f"({p2['late_sends']} late sends); batches {statuses(p2['batch_statuses'])}; "
            f"boards caught up {p2['drain_after_send_s']:.2f} s after the last answer; {verdict}"
        )
        out(cpu_line("phase 2", meter.phases["2"]))

    if args.single_seconds > 0:
        log(f"phase 3: single-result POSTs, {args.single_connections} connections, {args.single_seconds:g} s")
        with meter.phase("3"), args.service_cpu.phase("3"):
            p3 = await singles(args, svc)
        figures["singles"] = p3
        log(
            f"phase 3: {p3['ok']} answered 202 (results {statuses(p3['result_statuses'])}), errors "
            f"{statuses(p3['error_statuses'])}; boards caught up {p3['drain_after_s']:.2f} s after the last answer"
        )
        out(
            f"singles: {p3['rps']:.0f} requests/s, p50 {p3['p50_ms']:.1f} ms, p99 {p3['p99_ms']:.1f} ms, "
            f"errors {p3['errors']}"
        )
        out(cpu_line("phase 3", meter.phases["3"]))
        out(f"singles: service CPU per request: {args.service_cpu.per('3', p3['ok'])}")
        figures["singles"]["service_cpu_s"] = args.service_cpu.phases.get("3", {})
    return figures, batches


# --------------------------------------------------------------------------- phases 6 and 7: tournaments
TOURNAMENT = "bench-cup"


async def tournament_put(svc: Service, conn: Conn) -> None:
    """A tournament that started a minute ago and runs a day (best score, no entry, no limits)."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=60)
    config = {"title": "Bench Cup", "starts_at": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "duration_s": 86400}
    body = json.dumps(config).encode()
    path = f"/api/v1/games/{svc.game}/tournaments/{TOURNAMENT}"
    status, content = await svc.call(
        conn, "PUT", path, body, signed_headers(svc.key_id, svc.secret, path, body, method="PUT")
    )
    if status not in (200, 201):
        raise SystemExit(f"PUT {path}: {status} {content[:300]!r}")


async def tournament_score(svc: Service, conn: Conn, pid: str) -> int | None:
    path = f"/api/v1/games/{svc.game}/tournaments/{TOURNAMENT}/players/{pid}"
    for _ in range(50):
        status, content = await svc.call(conn, "GET", path)
        if status == 200:
            return json.loads(content)["score"]
        if status == 404:
            return None
        await asyncio.sleep(0.2)
    raise RuntimeError(f"GET {path}: {status} {content[:200]!r}")


async def tournament_phases(args, svc: Service, meter: CpuMeter, tag: str) -> dict:
    """Phase 6: two workloads of --events results interleaved (`interleaved`): T, every match naming
    one active tournament; N, the same naming none. Same game, history and machine, so T's share of
    N's events/s is the tournaments' cost with the machine's drift shared by both. Then the
    tournament board's exactness: each sampled player's score is their best accepted result in T.
    Phase 7: N's workload once more, alone (the reference the leagues' phases are also set against);
    with --drift, 7b: the same again right after it."""
    conn = svc.conn()
    await tournament_put(svc, conn)
    rng = random.Random(args.seed + 1)
    log(
        f"phase 6: {args.events} results naming tournament {TOURNAMENT} (T) and {args.events} naming none (N), "
        f"interleaved ABBA in {args.blocks} blocks each"
    )
    workloads = {
        "T": (workload(args, rng, f"{tag}-6T", tournament=TOURNAMENT), f"every match naming tournament {TOURNAMENT}"),
        "N": (workload(args, rng, f"{tag}-6N"), "the same naming none"),
    }
    got = await interleaved(args, svc, meter, "6", workloads)
    figures: dict = {"6": got["T"], "6N": got["N"]}
    best: dict[str, int] = {}
    for batch in workloads["T"][0]:
        for pid, pts, _ in batch.accepted:
            if pid != batch.sentinel:
                best[pid] = max(best.get(pid, -1), pts)
    sample = random.Random(2).sample(sorted(best), min(args.verify, len(best)))
    wrong = [p for p in sample if await tournament_score(svc, conn, p) != best[p]]
    figures["tournament_verified"], figures["tournament_mismatches"] = len(sample), len(wrong)
    out(f"phase 6 tournament board: {len(sample) - len(wrong)} of {len(sample)} sampled players exact")
    phases = [("7", "naming none, alone")]
    if args.drift:  # the same naming none once more: what a phase's more results cost the next one
        phases.append(("7b", "naming none, alone, again"))
    for phase, what in phases:
        batches = workload(args, rng, f"{tag}-{phase}")
        log(f"phase {phase}: max rate, {args.events} results, {what}")
        with meter.phase(phase), args.service_cpu.phase(phase):
            one = await max_rate(args, svc, batches, label=f"phase {phase}")
        figures[phase] = one
        out(
            f"phase {phase} ({what}): {one['eps']:.0f} events/s end-to-end, request p99 "
            f"{one['request_p99_ms']:.0f} ms, {lag_text(one)}; results {statuses(one['result_statuses'])}"
        )
        out(cpu_line(f"phase {phase}", meter.phases[phase]))
        out(
            f"phase {phase} service CPU per accepted result: "
            f"{args.service_cpu.per(phase, one['results_accepted'], 'us')}"
        )
        phase_details_out(args, phase, one["results_accepted"])
    conn.close()
    return figures


# --------------------------------------------------------------------------- phase 8: a league
LEAGUE = "bench-league"


async def league_put(svc: Service, conn: Conn) -> datetime:
    """A league whose first period started a minute ago and ends on the next 1 January (sum of the
    period's points, cohorts of 30, 4 divisions), so every accepted result of the game played from
    then on counts. Returns the period's start. Not in the first 3 minutes of a UTC day: the
    results played a minute before the start (league_phase's B) would fall on yesterday's boards."""
    now = datetime.now(UTC).replace(microsecond=0)
    if (now - timedelta(minutes=3)).date() != now.date():
        wait = 180 - (now - now.replace(hour=0, minute=0, second=0)).total_seconds()
        log(f"phase 8: {wait:.0f} s to 00:03 UTC, so both workloads fall on the same day's boards")
        await asyncio.sleep(wait)
        now = datetime.now(UTC).replace(microsecond=0)
    start = now - timedelta(seconds=60)
    divisions = [
        {"name": "bronze", "promote": 10, "demote": 0},
        {"name": "silver", "promote": 7, "demote": 5},
        {"name": "gold", "promote": 5, "demote": 5},
        {"name": "diamond", "promote": 0, "demote": 5},
    ]
    config = {
        "title": "Bench League",
        "starts_at": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "reset": "0 0 1 1 *",
        "cohort_size": 30,
        "scoring": "sum",
        "divisions": divisions,
    }
    body = json.dumps(config).encode()
    path = f"/api/v1/games/{svc.game}/leagues/{LEAGUE}"
    status, content = await svc.call(
        conn, "PUT", path, body, signed_headers(svc.key_id, svc.secret, path, body, method="PUT")
    )
    if status not in (200, 201):
        raise SystemExit(f"PUT {path}: {status} {content[:300]!r}")
    return start


async def league_get(svc: Service, conn: Conn, path: str) -> dict:
    for _ in range(50):
        status, content = await svc.call(conn, "GET", path)
        if status == 200:
            return json.loads(content)
        await asyncio.sleep(0.2)
    raise RuntimeError(f"GET {path}: {status} {content[:200]!r}")


def blocks_order(first: str, second: str, blocks: int) -> list[tuple[str, int]]:
    """ABBA: (first, 0), (second, 0), (second, 1), (first, 1), (first, 2), ...: each kind's blocks
    stand as far from the start, on average, as the other's, so a machine that speeds up or slows
    down steadily over the phase weighs on both alike."""
    order: list[tuple[str, int]] = []
    for i in range(blocks):
        order += [(first, i), (second, i)] if i % 2 == 0 else [(second, i), (first, i)]
    return order


def blocks_sum(blocks: list[dict]) -> dict:
    """A workload's figures over its blocks: events/s = its accepted results / the sum of its blocks'
    first request -> all on the boards; percentiles over all its requests and sentinels."""
    accepted = sum(b["results_accepted"] for b in blocks)
    elapsed = sum(b["elapsed_s"] for b in blocks)
    latencies = [x for b in blocks for x in b["latencies_s"]]
    lags = [x * 1000 for b in blocks for x in b["lags_s"]]
    statuses_all: Counter[str] = Counter()
    for b in blocks:
        statuses_all.update(b["result_statuses"])
    return {
        "blocks": len(blocks),
        "results_accepted": accepted,
        "elapsed_s": elapsed,
        "drain_after_send_s": sum(b["drain_after_send_s"] for b in blocks),
        "eps": accepted / elapsed if elapsed else float("nan"),
        "request_p99_ms": percentile(latencies, 99) * 1000,
        "lag_samples": len(lags),
        "lag_p50_ms": percentile(lags, 50),
        "lag_p99_ms": percentile(lags, 99),
        "lag_lost": sum(b["lag_lost"] for b in blocks),
        "lag_poll_errors": {},
        "result_statuses": dict(statuses_all),
        "verified": sum(b["verified"] for b in blocks),
        "mismatches": sum(b["mismatches"] for b in blocks),
        "block_eps": [b["eps"] for b in blocks],
    }


async def interleaved(
    args, svc: Service, meter: CpuMeter, phase: str, workloads: dict[str, tuple[list[Batch], str]]
) -> dict[str, dict]:
    """Two workloads ({kind: (batches, what)}, the one measured first) sent in --blocks
    blocks each, ABBA (`blocks_order`), the boards caught up after every block; each kind's figures
    over its blocks (`blocks_sum`) printed and returned, measured as phase `phase` + kind. With
    --pg-tables a kind's rows by table are approximate: PostgreSQL's backends report their counts
    late (at most once a second, later when idle), some of them into the next block, the other kind's."""
    per = max(1, args.events // args.batch // args.blocks)  # batches per block
    chunks: dict[str, list[list[Batch]]] = {}
    for kind, (batches, _) in workloads.items():  # the last block takes what the division left over
        chunks[kind] = [batches[i * per : (i + 1) * per] for i in range(args.blocks)]
        chunks[kind][-1] += batches[args.blocks * per :]
    done: dict[str, list[dict]] = {kind: [] for kind in workloads}
    for kind, i in blocks_order(*workloads, args.blocks):
        name = f"{phase}{kind}"
        with meter.phase(name), args.service_cpu.phase(name):
            got = await max_rate(
                args,
                svc,
                chunks[kind][i],
                label=f"phase {phase} {kind}{i + 1}",
                verify=max(1, args.verify // args.blocks),
            )
        done[kind].append(got)
        log(f"phase {phase} {kind}{i + 1}: {got['eps']:.0f} events/s end-to-end")
    figures = {}
    for kind, (_, what) in workloads.items():
        name = f"{phase}{kind}"
        got = figures[kind] = blocks_sum(done[kind])
        out(
            f"phase {name} ({what}): {got['eps']:.0f} events/s end-to-end over {got['blocks']} blocks "
            f"({', '.join(f'{x:.0f}' for x in got['block_eps'])}; {got['elapsed_s']:.1f} s, of which "
            f"{got['drain_after_send_s']:.1f} s after the blocks' last answers), request p99 "
            f"{got['request_p99_ms']:.0f} ms, {lag_text(got)}; results {statuses(got['result_statuses'])}"
        )
        out(cpu_line(f"phase {name}", meter.phases[name]))
        out(
            f"phase {name} service CPU per accepted result: {args.service_cpu.per(name, got['results_accepted'], 'us')}"
        )
        phase_details_out(args, name, got["results_accepted"])
    first, second = workloads
    out(f"phase {phase}: {first} at {figures[first]['eps'] / figures[second]['eps']:.2f} of {second}'s events/s")
    return figures


async def league_phase(args, svc: Service, meter: CpuMeter, tag: str) -> dict:
    """Phases 8 and 9, a league active on the game, each two workloads of --events results
    interleaved in --blocks blocks each, in ABBA order (`blocks_order`), the boards caught up
    after every block: L, results played now, which count in the league's open period; B, results
    of other players played a minute before the league's first period opened, which count on the
    season's boards only. The game, its history, the ledger, the machine and the league's per-batch
    lookup are the same for both; B lacks exactly the league's work per result. So L's share of B's
    events/s is the league's cost, with the machine's drift over minutes shared by both (phases 7
    and 8 run in turn differed by more than that: docs/performance.md, "Leagues: ingest").
    Phase 8: L's results are nearly all their players' first of the period (a seat taken in Lua, a
    member row written); phase 9: L's same players again, seated. Then the league's exactness: the
    players seated equal the distinct players of L (none of B), the cohorts are ceil(players / 30)
    (one division: everyone is new), and each sampled player's cohort score is the sum of their
    accepted points in L."""
    conn = svc.conn()
    opens = await league_put(svc, conn)
    before_league = (opens - timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")
    figures: dict = {"b_played_at": before_league}
    points: dict[str, int] = {}
    for phase, what in (("8", "first results of the period"), ("9", "the same players again, seated")):
        log(
            f"phase {phase}: a league active on the game, {what}: {args.events} results (L) and {args.events} "
            f"played before its period (B), interleaved ABBA in {args.blocks} blocks each"
        )
        workloads = {  # the same players in both phases (the same seeds)
            kind: (workload(args, random.Random(args.seed + seed), f"{tag}-{phase}{kind}", played_at=played), label)
            for kind, seed, played, label in (
                ("L", 2, None, f"a league active, {what}"),
                ("B", 5, before_league, "played before the league's period"),
            )
        }
        got = await interleaved(args, svc, meter, phase, workloads)
        figures[f"{phase}L"], figures[f"{phase}B"] = got["L"], got["B"]
        for batch in workloads["L"][0]:
            for pid, pts, _ in batch.accepted:
                points[pid] = points.get(pid, 0) + pts
    league = await league_get(svc, conn, f"/api/v1/games/{svc.game}/leagues/{LEAGUE}")
    seated = sum(d["players"] for d in league["divisions"])
    cohorts = sum(d["cohorts"] for d in league["divisions"])
    wrong = 0 if (seated, cohorts) == (len(points), -(-len(points) // 30)) else 1
    out(f"phases 8-9 league: {seated} players seated in {cohorts} cohorts ({len(points)} players accepted in L)")
    sample = random.Random(3).sample(sorted(points), min(args.verify, len(points)))
    for pid in sample:
        answer = await league_get(svc, conn, f"/api/v1/games/{svc.game}/leagues/{LEAGUE}/players/{pid}")
        entries = (answer.get("cohort") or {}).get("entries", [])
        mine = [e["score"] for e in entries if e["player_id"] == pid]
        wrong += mine != [points[pid]] or len(entries) > 30
    figures["league_verified"], figures["league_mismatches"] = len(sample), wrong
    out(f"phases 8-9 league cohorts: {len(sample) - wrong} of {len(sample)} sampled players exact")
    conn.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--game")
    parser.add_argument("--key-id")
    parser.add_argument("--secret")
    parser.add_argument("--events", type=int, default=300_000, help="results sent in phase 1 (one per match)")
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=500, help="one-result matches per batch (API max 1000)")
    parser.add_argument("--senders", type=int, default=4, help="concurrent senders of phase 1")
    parser.add_argument("--sample-every", type=int, default=2, help="phase 1: every Nth batch carries a sentinel")
    parser.add_argument("--verify", type=int, default=300, help="players sampled for the exactness check")
    parser.add_argument("--offered-rate", type=float, help="phase 2: results/s offered (default: --offered-share)")
    parser.add_argument(
        "--offered-share", type=float, default=0.7, help="phase 2: offer this share of phase 1's end-to-end rate"
    )
    parser.add_argument("--offered-seconds", type=float, default=20, help="phase 2 length; 0 skips it")
    parser.add_argument("--offered-inflight", type=int, default=8, help="phase 2: batches in flight at most")
    parser.add_argument("--offered-sample-every", type=int, default=1, help="phase 2: sentinel every Nth batch")
    parser.add_argument("--offered-give-up-s", type=float, default=10, help="phase 2 stops when sends run this late")
    parser.add_argument("--single-connections", type=int, default=32, help="phase 3 connections")
    parser.add_argument("--single-seconds", type=float, default=15, help="phase 3 length; 0 skips it")
    parser.add_argument("--timeout", type=float, default=120, help="seconds one request may take")
    parser.add_argument("--drain-timeout", type=float, default=600, help="seconds to wait for the boards")
    parser.add_argument("--redis-url", help="default: $REDIS_URL or redis://127.0.0.1:6379/0")
    parser.add_argument("--memory", action=argparse.BooleanOptionalAction, default=True, help="phase 5")
    parser.add_argument("--memory-members", type=int, default=1_000_000)
    parser.add_argument(
        "--tournament", action=argparse.BooleanOptionalAction, default=True, help="phases 6 and 7 (tournaments)"
    )
    parser.add_argument(
        "--league", action=argparse.BooleanOptionalAction, default=True, help="phases 8 and 9 (a league; needs 7)"
    )
    parser.add_argument(
        "--blocks", type=int, default=2, help="phases 6, 8 and 9: blocks of each workload, interleaved ABBA"
    )
    parser.add_argument(
        "--drift",
        action="store_true",
        help="phase 7b: phase 7's workload once more right after it (what the growth alone costs a phase)",
    )
    parser.add_argument(
        "--redis-commands",
        action="store_true",
        help="print Redis's time by command per accepted result for each phase (INFO commandstats)",
    )
    parser.add_argument(
        "--pg-tables",
        action="store_true",
        help="print PostgreSQL's scans and rows by table per accepted result for each phase (pg_stat_user_tables)",
    )
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--json", help="also write all figures to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args()
    args.url = args.url.rstrip("/")
    if args.events <= 0 or not 1 <= args.batch <= 1000 or args.senders <= 0 or args.players < 1:
        raise SystemExit("--events, --senders and --players must be positive, --batch 1..1000")
    if args.offered_seconds > 0 and ((args.offered_rate or args.offered_share) <= 0 or args.offered_inflight <= 0):
        raise SystemExit("--offered-rate (or --offered-share) and --offered-inflight must be positive")
    args.service_cpu = ServiceCpu(
        service_processes(redis_url(args.redis_url), os.environ.get("DATABASE_URL")),
        redis_url(args.redis_url) if args.redis_commands else None,
        os.environ.get("DATABASE_URL") if args.pg_tables else None,
    )

    # The season opened an hour ago: phase 8's B results are played before the league's start.
    season_start = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    game, key_id, secret = provision(args.game, args.key_id, args.secret, "ingest", season_start)
    args.seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    tag = f"{args.seed:x}"
    log(f"game {game}, {args.players} players, seed {args.seed}")
    log(f"load average before the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")

    svc = Service(args, game, key_id, secret)
    meter = CpuMeter()
    figures, batches = asyncio.run(http_phases(args, svc, meter, tag))
    p1 = figures["max_rate"]

    log("phase 4: raw limit, phase 1's accepted results through boards.writer.events_apply (private key prefix)")
    with meter.phase("4"):
        raw = raw_limit(args, game, batches)
    figures["raw"] = raw
    out(
        f"phase 4 raw: {raw['events']} events through boards.writer.events_apply in {raw['elapsed_s']:.2f} s "
        f"({raw['calls']} calls as the worker makes them, chunk {raw['apply_chunk']}) = {raw['eps']:.0f} events/s"
    )
    out(cpu_line("phase 4 (the writer itself)", meter.phases["4"]))

    if args.memory:
        with meter.phase("5"):
            mem = memory(args)
        figures["memory"] = mem
        out(
            f"memory: board {mem['zset_bytes_per_member']:.1f} bytes/member (used_memory delta; MEMORY USAGE "
            f"{mem['zset_memory_usage_per_member']:.1f}, {mem['zset_encoding']}, {mem['members']} members), "
            f"dedup {mem['dedup_bytes_per_marker']:.1f} bytes/marker ({mem['dedup_hashes']} {mem['dedup_encoding']} "
            f"hashes of 128, MEMORY USAGE {mem['dedup_hash_memory_usage']} bytes each)"
        )
        out(cpu_line("phase 5", meter.phases["5"]))

    ratio = p1["eps"] / raw["eps"] if raw["eps"] else float("nan")
    summary = (
        f"ingest: {p1['eps']:.0f} events/s end-to-end, raw {raw['eps']:.0f} events/s, ratio {ratio:.2f}, "
        f"lag p99 {p1['lag_p99_ms']:.0f} ms"
    )
    if args.tournament:
        tournaments = asyncio.run(tournament_phases(args, svc, meter, tag))
        figures["tournaments"] = tournaments
        with_t, none, without = (tournaments[k]["eps"] for k in ("6", "6N", "7"))
        summary += (
            f"\ntournaments: {with_t:.0f} events/s end-to-end with every match naming one (ratio to raw "
            f"{with_t / raw['eps']:.2f}) against {none:.0f} naming none ({none / raw['eps']:.2f}) interleaved: "
            f"{with_t / none:.2f} of the same run's ratio without tournaments ({with_t / without:.2f} of phase "
            f"7's, {without:.0f} naming none alone right after); tournament board "
            f"{tournaments['tournament_verified'] - tournaments['tournament_mismatches']} of "
            f"{tournaments['tournament_verified']} sampled players exact"
        )
        if "7b" in tournaments:
            again = tournaments["7b"]["eps"]
            summary += (
                f"\ndrift: the same naming none again right after phase 7: {again:.0f} events/s, "
                f"{again / without:.2f} of phase 7's (the boards and ledger {args.events:,} results larger)"
            )
        if tournaments["tournament_mismatches"] or any(tournaments[k]["mismatches"] for k in ("6", "6N", "7")):
            p1["mismatches"] += 1  # the exit status says so
        if args.league:
            league = asyncio.run(league_phase(args, svc, meter, tag))
            figures["league"] = league
            parts = []
            for phase, what in (("8", "first results"), ("9", "seated players")):
                counted, before = league[f"{phase}L"]["eps"], league[f"{phase}B"]["eps"]
                parts.append(
                    f"{what} {counted:.0f} events/s end-to-end (ratio to raw {counted / raw['eps']:.2f}) against "
                    f"{before:.0f} ({before / raw['eps']:.2f}) interleaved: {counted / before:.2f} of the same "
                    f"run's ratio without one ({counted / without:.2f} of phase 7's)"
                )
            summary += (
                f"\nleagues: with a league active, {'; '.join(parts)}; cohorts "
                f"{league['league_verified'] - league['league_mismatches']} of {league['league_verified']} "
                "sampled players exact"
            )
            if league["league_mismatches"] or any(league[k]["mismatches"] for k in ("8L", "8B", "9L", "9B")):
                p1["mismatches"] += 1
    if args.json:
        figures.update(
            game=game,
            config={k: v for k, v in vars(args).items() if k not in ("secret", "key_id")},
            ratio=ratio,
            load_generator={**meter.totals(), "phases": meter.phases},
            summary=summary,
        )
        Path(args.json).write_text(json.dumps(figures, indent=2, default=str))
    out(summary)
    if p1["mismatches"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
