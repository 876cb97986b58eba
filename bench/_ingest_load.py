#!/usr/bin/env python3
"""Background batch ingest for phase D of bench/reads.py (a separate process: not the measured side).

    .venv/bin/python bench/_ingest_load.py --url URL --game GAME --key-id KEY --secret SECRET \
        [--players 100000] [--rate 5000] [--batch 500] [--senders 4]

Protocol on stdin/stdout (reads.py drives it): once set up it prints `ready`; on a line `go` it
starts sending; on a line `stop` (or end of input) it stops starting batches, waits for the ones in
flight and prints one JSON object with its figures, then exits.

Each batch is `--batch` matches of one result each: distinct random players among 1..--players (the
same ids as the seeded board, so the board keeps its size), fresh uuid4 match ids, points 0-10000,
played_at = now, POSTed signed to /api/v1/games/{game}/matches/batch. Batch i is due at
go + i * batch / rate; `--senders` threads take the batches in turn (a late batch goes at once, so the
total keeps to the rate while the service keeps up), each on its own keep-alive httpx client.
"""

import argparse
import json
import random
import sys
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import match, now_iso, percentile, player_id, region_of, signed_headers


class Sender:
    def __init__(self, args, path: str):
        self.args = args
        self.path = path
        self.per_batch = min(args.batch, args.players)
        self.interval = self.per_batch / args.rate
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.next_index = 0
        self.t0 = 0.0
        self.batches_sent = 0
        self.batches_ok = 0  # answered 200
        self.batch_errors: dict[str, int] = {}  # status (or exception) -> batches not answered 200
        self.results_sent = 0
        self.results_accepted = 0  # result status `accepted` in a match answered 202
        self.match_statuses: dict[str, int] = {}  # per-match http_status inside 200 answers
        self.result_statuses: dict[str, int] = {}
        self.latencies: list[float] = []
        self.last_answer = 0.0

    def body(self, rng: random.Random) -> bytes:
        played_at = now_iso()
        ids = rng.sample(range(1, self.args.players + 1), self.per_batch)
        matches = [match(played_at, [(player_id(p), rng.randint(0, 10_000), region_of(p))]) for p in ids]
        return json.dumps({"matches": matches}, separators=(",", ":")).encode()

    def run(self, n: int) -> None:
        rng = random.Random(self.args.seed * 1000 + n)
        with httpx.Client(base_url=self.args.url, timeout=self.args.timeout) as client:
            while not self.stop.is_set():
                with self.lock:
                    i = self.next_index
                    self.next_index += 1
                wait = self.t0 + i * self.interval - time.perf_counter()
                if wait > 0 and self.stop.wait(wait):
                    return
                body = self.body(rng)
                t = time.perf_counter()
                try:
                    headers = signed_headers(self.args.key_id, self.args.secret, self.path, body)
                    r = client.post(self.path, content=body, headers=headers)
                    status, answer = r.status_code, (r.json() if r.status_code == 200 else None)
                except (httpx.HTTPError, ValueError) as exc:
                    status, answer = type(exc).__name__, None
                done = time.perf_counter()
                self.record(status, answer, done - t, done)

    def record(self, status, answer, latency: float, done: float) -> None:
        with self.lock:
            self.batches_sent += 1
            self.results_sent += self.per_batch
            self.last_answer = max(self.last_answer, done)
            if status != 200:
                self.batch_errors[str(status)] = self.batch_errors.get(str(status), 0) + 1
                return
            self.batches_ok += 1
            self.latencies.append(latency)
            for m in answer["matches"]:
                code = str(m.get("http_status"))
                self.match_statuses[code] = self.match_statuses.get(code, 0) + 1
                for res in m.get("results", []):
                    st = str(res.get("status"))
                    self.result_statuses[st] = self.result_statuses.get(st, 0) + 1
                    if code == "202" and st == "accepted":
                        self.results_accepted += 1

    def figures(self, stopped: float) -> dict:
        """`achieved_rate`: accepted results over the time the sending took, but at least the
        schedule's share of the batches sent (each batch stands for one interval of the schedule,
        so a run that keeps to the schedule is not credited with its last batch early)."""
        elapsed = max(max(stopped, self.last_answer) - self.t0, self.batches_sent * self.interval)
        return {
            "offered_rate": self.args.rate,
            "batch": self.per_batch,
            "senders": self.args.senders,
            "elapsed_s": elapsed,
            "batches_sent": self.batches_sent,
            "batches_ok": self.batches_ok,
            "batches_not_200": sum(self.batch_errors.values()),
            "batch_errors": self.batch_errors,
            "results_sent": self.results_sent,
            "results_accepted": self.results_accepted,
            "achieved_rate": self.results_accepted / elapsed if elapsed > 0 else 0.0,
            "match_statuses": self.match_statuses,
            "result_statuses": self.result_statuses,
            "batch_p50_ms": percentile(self.latencies, 50) * 1000,
            "batch_p99_ms": percentile(self.latencies, 99) * 1000,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--game", required=True)
    parser.add_argument("--key-id", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=5000, help="results per second, all senders together")
    parser.add_argument("--batch", type=int, default=500, help="matches (of one result each) per batch")
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    if args.rate <= 0 or args.batch <= 0 or args.senders <= 0:
        raise SystemExit("--rate, --batch and --senders must be positive")
    sender = Sender(args, f"/api/v1/games/{args.game}/matches/batch")
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    sender.t0 = time.perf_counter()
    threads = [threading.Thread(target=sender.run, args=(n,), daemon=True) for n in range(args.senders)]
    for t in threads:
        t.start()
    sys.stdin.readline()  # `stop`, or end of input when the parent goes away
    stopped = time.perf_counter()
    sender.stop.set()
    for t in threads:
        t.join()
    print(json.dumps(sender.figures(stopped)), flush=True)


if __name__ == "__main__":
    main()
