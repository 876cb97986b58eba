#!/usr/bin/env python3
"""Ingest benchmark: signed batch submissions against a RUNNING service, end to end.

    .venv/bin/python bench/ingest.py --url http://127.0.0.1:8000 [--events 200000] [--no-memory]

Measures in one run:
  * end-to-end events/s: first request sent -> every event on the boards (/health/ready
    queue_lag_s == 0, then a sample of players checked on the `all` board for the exact total);
  * accept -> visible lag (p50/p99): each sampled batch carries one unique sentinel player; a
    poller GETs /boards/best/players/{sentinel} every ~20 ms after the batch's answer arrives;
  * the raw limit: the same events through boards/lua/apply_events.lua on the same Redis, from
    one process, grouped and pipelined exactly like boards.writer.events_apply (own key prefix);
  * with --memory: Redis bytes per board member and per dedup marker (1,000,000 each).

Needs no Django: requests are signed by common/signing.py (standard library only); provisioning (when --game/--key-id/
--secret are not given) runs `manage.py create_game` / `create_server_key`.
"""

import argparse
import json
import os
import queue
import random
import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    ROOT,
    log,
    match,
    now_iso,
    percentile,
    player_id,
    provision,
    random_pair,
    redis_url,
    region_of,
    signed_headers,
)

try:
    from tqdm import tqdm
except ImportError:  # progress is optional
    tqdm = None

LUA = ROOT / "boards" / "lua" / "apply_events.lua"
ENQUEUE_CHUNK = 2000  # scoring.services.ENQUEUE_CHUNK: one apply task per 2000 accepted events
APPLY_CHUNK = 2000  # settings.SCORING_APPLY_CHUNK: events per Lua call
DEDUP_GROUP = 128  # boards.keys.DEDUP_GROUP
DAY_TTL = 8 * 86400 + 3600
WEEK_TTL = 14 * 86400 + 3600
MONTH_TTL = 35 * 86400 + 3600
DEDUP_TTL = 6 * 3600


# --------------------------------------------------------------------------- workload
class Workload:
    """Batches of `matches` matches x 2 players; every `sample_every`-th batch carries a sentinel."""

    def __init__(self, *, events: int, batch: int, players: int, sample_every: int, seed: int):
        rng = random.Random(seed)
        self.run_tag = f"{seed:x}"
        n_matches = max(1, events // 2)
        self.bodies: list[bytes] = []
        self.sentinels: list[str | None] = []
        self.expected: dict[str, int] = defaultdict(int)
        self.events: list[tuple[str, int, str]] = []  # (player, points, region) in submission order
        played_at = now_iso(ceil=True)
        b = 0
        for start in range(0, n_matches, batch):
            count = min(batch, n_matches - start)
            sentinel = f"s-{self.run_tag}-{b}" if b % sample_every == 0 else None
            matches = []
            for j in range(count):
                a, c = random_pair(rng, players)
                results = [
                    (player_id(a), rng.randint(0, 1000), region_of(a)),
                    (player_id(c), rng.randint(0, 1000), region_of(c)),
                ]
                if sentinel is not None and j == count - 1:
                    results[1] = (sentinel, 1, "eu")  # the batch's last match: a unique player
                for pid, pts, reg in results:
                    self.expected[pid] += pts
                    self.events.append((pid, pts, reg))
                matches.append(match(played_at, results))
            self.bodies.append(json.dumps({"matches": matches}, separators=(",", ":")).encode())
            self.sentinels.append(sentinel)
            b += 1

    @property
    def n_events(self) -> int:
        return len(self.events)


# --------------------------------------------------------------------------- end to end
class LagPoller(threading.Thread):
    """Polls /boards/best/players/{sentinel} every ~20 ms for each accepted, not yet visible sentinel."""

    def __init__(self, base: str, game: str, interval: float = 0.02):
        super().__init__(daemon=True)
        self.base, self.game, self.interval = base, game, interval
        self.inbox: queue.Queue[tuple[str, float]] = queue.Queue()
        self.lags: list[float] = []
        self.stop_when_empty = threading.Event()
        self.polls = 0
        self.lost = 0

    def run(self) -> None:
        pending: dict[str, float] = {}
        give_up: float | None = None
        with httpx.Client(base_url=self.base, timeout=10) as client:
            while True:
                while True:
                    try:
                        sentinel, t_accept = self.inbox.get_nowait()
                    except queue.Empty:
                        break
                    pending[sentinel] = t_accept
                if self.stop_when_empty.is_set() and self.inbox.empty():
                    if not pending:
                        return
                    if give_up is None:
                        give_up = time.perf_counter() + 5  # everything is applied by now
                    elif time.perf_counter() > give_up:
                        self.lost = len(pending)
                        return
                cycle = time.perf_counter()
                for sentinel, t_accept in list(pending.items()):
                    r = client.get(f"/api/v1/games/{self.game}/boards/best/players/{sentinel}")
                    self.polls += 1
                    if r.status_code == 200:
                        self.lags.append(time.perf_counter() - t_accept)
                        del pending[sentinel]
                time.sleep(max(0.0, self.interval - (time.perf_counter() - cycle)))


def end_to_end(args, work: Workload, game: str, key_id: str, secret: str) -> dict:
    path = f"/api/v1/games/{game}/matches/batch"
    poller = LagPoller(args.url, game)
    poller.start()
    local = threading.local()
    statuses: dict[str, int] = defaultdict(int)
    lock = threading.Lock()
    request_s: list[float] = []
    bar = tqdm(total=work.n_events, unit="ev", file=sys.stderr, disable=args.quiet) if tqdm else None

    def send(i: int) -> None:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(base_url=args.url, timeout=300)
        body = work.bodies[i]
        t = time.perf_counter()
        r = client.post(path, content=body, headers=signed_headers(key_id, secret, path, body))
        t_done = time.perf_counter()
        if r.status_code != 200:
            raise RuntimeError(f"batch {i}: HTTP {r.status_code} {r.text[:300]}")
        counts: dict[str, int] = defaultdict(int)
        answers = r.json()["matches"]
        for answer in answers:
            if answer["http_status"] != 202:
                counts[f"http_{answer['http_status']}"] += len(answer.get("results", [])) or 2
                continue
            for res in answer["results"]:
                counts[res["status"]] += 1
        sentinel = work.sentinels[i]
        if sentinel is not None and any(
            res["player_id"] == sentinel and res["status"] == "accepted" for res in answers[-1].get("results", [])
        ):
            poller.inbox.put((sentinel, t_done))
        with lock:
            request_s.append(t_done - t)
            for k, v in counts.items():
                statuses[k] += v
        if bar:
            bar.update(sum(counts.values()))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        for f in [pool.submit(send, i) for i in range(len(work.bodies))]:
            f.result()
    t_sent = time.perf_counter()
    if bar:
        bar.close()
    log(f"all {len(work.bodies)} batches answered in {t_sent - t0:.2f} s; waiting for the boards ...")

    max_lag_seen = 0.0
    broker = redis.Redis.from_url(redis_url(args.redis_url))
    with httpx.Client(base_url=args.url, timeout=10) as client:
        deadline = time.perf_counter() + args.drain_timeout
        queued, queued_since = -1, time.perf_counter()
        while True:
            ready = client.get("/health/ready").json()
            lag = ready.get("queue_lag_s")
            if lag == 0:
                t_end = time.perf_counter()
                break
            max_lag_seen = max(max_lag_seen, lag or 0)
            if time.perf_counter() > deadline:
                raise RuntimeError(f"queue_lag_s still {lag} after {args.drain_timeout} s")
            now_queued = broker.llen("scoring")
            if now_queued != queued or now_queued == 0:
                queued, queued_since = now_queued, time.perf_counter()
            elif time.perf_counter() - queued_since > 60:
                raise RuntimeError(f"{queued} apply tasks queued, none taken for 60 s: is a worker running?")
            time.sleep(0.02)
    broker.close()
    with httpx.Client(base_url=args.url, timeout=10) as client:
        # Exactness check on a sample of players (not timed).
        rng = random.Random(1)
        sample = rng.sample(sorted(p for p in work.expected if p.startswith("p")), min(300, len(work.expected)))
        wrong = []
        for pid in sample:
            r = client.get(f"/api/v1/games/{game}/boards/all/players/{pid}")
            got = r.json().get("score") if r.status_code == 200 else None
            if got != work.expected[pid]:
                wrong.append((pid, work.expected[pid], got, r.status_code))
    poller.stop_when_empty.set()
    poller.join(timeout=60)
    if wrong:
        log(f"MISMATCH on {len(wrong)}/{len(sample)} sampled players, e.g. {wrong[:5]}")
    else:
        log(f"verified {len(sample)} sampled players: exact totals on the `all` board")
    accepted = statuses.get("accepted", 0)
    return {
        "events": work.n_events,
        "accepted": accepted,
        "statuses": dict(statuses),
        "send_s": t_sent - t0,
        "elapsed_s": t_end - t0,
        "drain_after_send_s": t_end - t_sent,
        "eps": work.n_events / (t_end - t0),
        "accept_eps": work.n_events / (t_sent - t0),
        "request_p50_s": percentile(request_s, 50),
        "request_p99_s": percentile(request_s, 99),
        "lags": poller.lags,
        "lag_polls": poller.polls,
        "lag_lost": poller.lost,
        "max_queue_lag_s": max_lag_seen,
        "mismatches": len(wrong),
        "verified": len(sample),
    }


# --------------------------------------------------------------------------- raw Lua limit
def raw_limit(args, work: Workload) -> dict:
    """The worker's Redis work alone: same script, same KEYS/ARGV layout, same grouping."""
    r = redis.Redis.from_url(redis_url(args.redis_url), decode_responses=True)
    script = r.register_script(LUA.read_text())
    prefix = f"benchraw{work.run_tag}"
    game, season, day, week = "bench", 1, "2026-10-13", "2026-W42"
    span = 1 << args.time_bits
    max_points = (1 << (53 - args.time_bits)) - 1

    def board_key(board: str, region: str, period: str = "-") -> str:
        return f"{prefix}:b:{game}:{season}:{board}:{region}:{period}"

    tasks = []  # one pipeline per task: a list of (keys, argv) per group
    event_id = 1_000_000
    for start in range(0, work.n_events, ENQUEUE_CHUNK):
        chunk = work.events[start : start + ENQUEUE_CHUNK]
        groups: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
        for pid, pts, reg in chunk:
            groups[reg].append((event_id, pid, pts))
            event_id += 1
        calls = []
        for reg, rows in groups.items():
            sums, bests = [], []
            for rg in ("global", reg):  # boards_for(): global then the region; all, daily, weekly, monthly; best
                sums += [
                    board_key("all", rg),
                    board_key("daily", rg, day),
                    board_key("weekly", rg, week),
                    board_key("monthly", rg, day[:7]),
                ]
                bests.append(board_key("best", rg))
            boards = sums + bests
            ttls = [0, DAY_TTL, WEEK_TTL, MONTH_TTL] * 2 + [0, 0]
            for s in range(0, len(rows), APPLY_CHUNK):
                keys = [f"{prefix}:pause:{game}", f"{prefix}:hidden:{game}", *boards]
                dedup_index: dict[str, int] = {}
                argv: list = [span, max_points, len(sums), len(bests), 0, DEDUP_TTL, *ttls]
                for eid, pid, pts in rows[s : s + APPLY_CHUNK]:
                    dkey = f"{prefix}:dd:{eid // DEDUP_GROUP}"
                    if dkey not in dedup_index:
                        keys.append(dkey)
                        dedup_index[dkey] = len(keys)
                    argv += [eid, dedup_index[dkey], str(eid % DEDUP_GROUP), pid, pts, 3600 + eid % 600]
                calls.append((keys, argv))
        tasks.append(calls)

    applied = 0
    t0 = time.perf_counter()
    for calls in tasks:
        pipe = r.pipeline(transaction=False)
        for keys, argv in calls:
            script(keys=keys, args=argv, client=pipe)
        for reply in pipe.execute():
            applied += int(reply[1])
    elapsed = time.perf_counter() - t0
    n_calls = sum(len(c) for c in tasks)
    deleted = 0
    for key in r.scan_iter(match=f"{prefix}:*", count=5000):
        deleted += r.delete(key)
    r.close()
    if applied != work.n_events:
        log(f"raw: applied {applied} of {work.n_events} (expected all)")
    return {"eps": work.n_events / elapsed, "elapsed_s": elapsed, "calls": n_calls, "keys_deleted": deleted}


# --------------------------------------------------------------------------- memory
def memory(args) -> dict:
    r = redis.Redis.from_url(redis_url(args.redis_url))
    prefix = f"benchmem{random.randrange(1 << 30):x}"
    n = args.memory_members
    rng = random.Random(7)
    zkey = f"{prefix}:b:bench:1:all:global:-"

    def used() -> int:
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
    keys = set()
    for i in range(n):
        eid = base_id + i
        key = f"{prefix}:dd:{eid // DEDUP_GROUP}"
        pipe.hset(key, str(eid % DEDUP_GROUP), "1")
        keys.add(key)
        if len(pipe) >= 10_000:
            pipe.execute()
    for key in keys:
        pipe.expire(key, DEDUP_TTL)  # the service sets a TTL on every dedup hash
    pipe.execute()
    after_dd = used()
    sample_key = next(iter(keys))
    dd_usage = int(r.memory_usage(sample_key, samples=0))
    dd_enc = r.object("encoding", sample_key)
    r.delete(zkey)
    for start in range(0, len(keys), 1000):
        r.delete(*list(keys)[start : start + 1000])
    r.close()
    return {
        "members": n,
        "zset_bytes_per_member": (after_zset - before) / n,
        "zset_memory_usage_per_member": zusage / n,
        "zset_encoding": zenc.decode() if isinstance(zenc, bytes) else zenc,
        "dedup_bytes_per_marker": (after_dd - before_dd) / n,
        "dedup_hashes": len(keys),
        "dedup_hash_memory_usage": dd_usage,
        "dedup_encoding": dd_enc.decode() if isinstance(dd_enc, bytes) else dd_enc,
    }


# --------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--game")
    parser.add_argument("--key-id")
    parser.add_argument("--secret")
    parser.add_argument("--events", type=int, default=200_000, help="results to submit (2 per match)")
    parser.add_argument("--batch", type=int, default=1000, help="matches per request (API max 1000)")
    parser.add_argument("--players", type=int, default=50_000)
    parser.add_argument("--concurrency", type=int, default=4, help="concurrent requests")
    parser.add_argument("--sample-every", type=int, default=5, help="every Nth batch carries a lag sentinel")
    parser.add_argument("--drain-timeout", type=float, default=600)
    parser.add_argument("--redis-url", help="default: $REDIS_URL or redis://127.0.0.1:6379/0")
    parser.add_argument("--time-bits", type=int, default=23, help="season time bits (90 days + 1 h grace: 23)")
    parser.add_argument("--memory", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--memory-members", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--json", help="also write all figures to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args()
    args.url = args.url.rstrip("/")

    game, key_id, secret = provision(args.game, args.key_id, args.secret, "ingest")
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    work = Workload(
        events=args.events, batch=args.batch, players=args.players, sample_every=args.sample_every, seed=seed
    )
    log(f"{work.n_events} events in {len(work.bodies)} batches, {args.players} players, game {game}")
    log(f"load average before the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")

    e2e = end_to_end(args, work, game, key_id, secret)
    lags_ms = [x * 1000 for x in e2e["lags"]]
    log(
        f"end to end: {e2e['events']} events in {e2e['elapsed_s']:.2f} s = {e2e['eps']:.0f} events/s "
        f"(answered in {e2e['send_s']:.2f} s = {e2e['accept_eps']:.0f} events/s accepted; "
        f"boards caught up {e2e['drain_after_send_s']:.2f} s after the last answer; "
        f"request p50 {e2e['request_p50_s'] * 1000:.0f} ms p99 {e2e['request_p99_s'] * 1000:.0f} ms; "
        f"statuses {e2e['statuses']}; max queue_lag_s seen {e2e['max_queue_lag_s']})"
    )
    log(f"lag samples: {len(lags_ms)} ({', '.join(f'{x:.0f}' for x in sorted(lags_ms))} ms)")

    raw = raw_limit(args, work)
    log(f"raw Lua: {work.n_events} events in {raw['elapsed_s']:.2f} s ({raw['calls']} EVALSHA) = {raw['eps']:.0f} /s")

    mem = None
    if args.memory:
        mem = memory(args)
        print(
            f"memory: board {mem['zset_bytes_per_member']:.1f} bytes/member (used_memory delta; MEMORY USAGE "
            f"{mem['zset_memory_usage_per_member']:.1f}, {mem['zset_encoding']}, {mem['members']} members), "
            f"dedup {mem['dedup_bytes_per_marker']:.1f} bytes/marker ({mem['dedup_hashes']} {mem['dedup_encoding']} "
            f"hashes of 128, MEMORY USAGE {mem['dedup_hash_memory_usage']} bytes each)",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"game": game, "end_to_end": e2e, "raw": raw, "memory": mem}, indent=2, default=str)
        )
    print(
        f"ingest: {e2e['eps']:.0f} events/s end-to-end, raw {raw['eps']:.0f} events/s, "
        f"ratio {e2e['eps'] / raw['eps']:.2f}, lag p50 {percentile(lags_ms, 50):.0f} ms, "
        f"lag p99 {percentile(lags_ms, 99):.0f} ms",
        flush=True,
    )
    if e2e["mismatches"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
