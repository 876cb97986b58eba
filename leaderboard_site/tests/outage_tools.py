"""Machinery of the outage tests (test_outages.py): a private redis-server and a private PostgreSQL
cluster that a test stops and starts again (same port, same data), and a steady load of signed
writes and board reads against a running web process, every answer recorded with its timing.
The restore drill and the shared-Redis test (test_restore_drill.py, test_shared_redis.py) take
databases of their own on the machine's PostgreSQL and run a whole service (web, worker, beat) on
each, driven through `manage.py` as an operator does.
"""

import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from django.db import connection

from common.signing import signed_headers
from common.testing import ROOT, free_port, process_env, signed_http, start_beat, start_web, start_worker, stop
from scoring.models import EventStatus, ScoreEvent, UnappliedEvent

PG_BIN = Path(os.environ.get("TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
# The client programs an operator runs (docs/operations.md: pg_dump, dropdb, createdb, pg_restore).
PG_CLIENT_BIN = Path(os.environ.get("TEST_PG_CLIENT_BIN", "/usr/bin"))


class PrivateRedis:
    """A redis-server of the test's own that keeps its data on disk (append-only file), so it
    comes back with its data when it is stopped and started again on the same port and directory."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        self.binary = binary
        self.dir = Path(tempfile.mkdtemp(prefix="lb-outage-redis-"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--dir",
                str(self.dir),
                "--maxmemory-policy",
                "noeviction",
                "--logfile",
                str(self.dir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.ping() == "PONG":
                return
            time.sleep(0.02)
        raise RuntimeError(f"private redis-server did not start on port {self.port}")

    def ping(self) -> str:
        """The server's answer to PING (PONG, or -LOADING while it reads its data back), or ''."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).decode(errors="replace").strip().lstrip("+")
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM: Redis writes its append-only file out and exits (as a service manager stops it)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)
        self.proc = None

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivatePostgres:
    """A PostgreSQL cluster of the test's own (initdb in a temp dir, trust auth, a free port),
    restarted by pg_ctl as an operator would. As root, its programs run as the `postgres` user."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="lb-outage-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/leaderboard"
        self.as_postgres: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, user="postgres")
            self.as_postgres = ["runuser", "-u", "postgres", "--"]

    def run(self, program: str, *args: str) -> None:
        subprocess.run(
            [*self.as_postgres, str(PG_BIN / program), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def init(self) -> None:
        self.run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        self.start()
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "leaderboard")

    def pg_ctl(self, *args: str) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c autovacuum=off"
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "postgres.log"), "-o", options, *args)

    def start(self) -> None:
        self.pg_ctl("-w", "-t", "30", "start")

    def stop(self) -> None:
        """A fast shutdown: open transactions are rolled back, connections cut."""
        self.pg_ctl("-w", "-t", "30", "-m", "fast", "stop")

    def close(self) -> None:
        if (self.data / "postmaster.pid").exists():
            try:
                self.pg_ctl("-w", "-t", "30", "-m", "immediate", "stop")
            except subprocess.CalledProcessError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class Answer:
    """One request of the load: when it was sent (monotonic), how long it took, and what came back
    (`status` 0 and `error` set when no HTTP answer came: a reset, a timeout)."""

    kind: str  # "single", "batch" or "read"
    sent: float
    took: float
    status: int
    code: str = ""
    error: str = ""
    # writes: match id -> its own status (a single's is the response's; a batch's, each match's)
    matches: dict[str, int] = field(default_factory=dict)


class Load:
    """Signed single-result POSTs, batches and board reads from a few threads, each on its own
    keep-alive connection, at a modest steady rate; every answer is kept."""

    def __init__(
        self,
        *,
        port: int,
        game: str,
        key_id: str,
        secret: str,
        singles: int = 2,
        batches: int = 1,
        readers: int = 2,
        pause_s: float = 0.02,
        players: int = 400,
    ) -> None:
        self.port = port
        self.game = game
        self.key_id = key_id
        self.secret = secret
        self.pause_s = pause_s
        self.players = players
        self.answers: list[Answer] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            *(threading.Thread(target=self._run, args=("single", i), daemon=True) for i in range(singles)),
            *(threading.Thread(target=self._run, args=("batch", i), daemon=True) for i in range(batches)),
            *(threading.Thread(target=self._run, args=("read", i), daemon=True) for i in range(readers)),
        ]

    def __enter__(self) -> "Load":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def between(self, start: float, end: float, kind: str | None = None) -> list[Answer]:
        with self._lock:
            return [a for a in self.answers if start <= a.sent < end and (kind is None or a.kind == kind)]

    def _run(self, kind: str, seed: int) -> None:
        rng = random.Random(f"{kind}-{seed}")
        conn: http.client.HTTPConnection | None = None
        while not self._stop.is_set():
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            method, path, body, headers, matches = self._request(kind, rng)
            sent = time.monotonic()
            answer = Answer(kind=kind, sent=sent, took=0.0, status=0)
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                raw = response.read()
                answer.took = time.monotonic() - sent
                answer.status = response.status
                self._read_answer(answer, raw, matches)
                if response.getheader("connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as exc:
                answer.took = time.monotonic() - sent
                answer.error = f"{exc.__class__.__name__}: {exc}"
                answer.matches = dict.fromkeys(matches, 0)
                conn.close()
                conn = None
            with self._lock:
                self.answers.append(answer)
            time.sleep(self.pause_s)
        if conn is not None:
            conn.close()

    def _result(self, rng: random.Random) -> dict[str, object]:
        return {"player_id": f"p{rng.randrange(self.players)}", "points": rng.randint(1, 500), "region": "eu"}

    def _match(self, rng: random.Random) -> dict[str, object]:
        played = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
        results = [self._result(rng)]
        second = self._result(rng)
        if rng.random() < 0.5 and second["player_id"] != results[0]["player_id"]:
            results.append(second)
        return {"played_at": played, "duration_s": 300, "results": results}

    def _request(self, kind: str, rng: random.Random) -> tuple[str, str, bytes | None, dict[str, str], list[str]]:
        if kind == "read":
            player = f"p{rng.randrange(self.players)}"
            path = rng.choice(
                [
                    f"/api/v1/games/{self.game}/boards/all/top?n=10",
                    f"/api/v1/games/{self.game}/boards/daily/top?n=50",
                    f"/api/v1/games/{self.game}/boards/all/players/{player}",
                    f"/api/v1/games/{self.game}/boards/all/players/{player}/around?r=2",
                ]
            )
            return "GET", path, None, {}, []
        if kind == "single":
            match_id = str(uuid.uuid4())
            path = f"/api/v1/games/{self.game}/matches/{match_id}/results"
            body = json.dumps(self._match(rng)).encode()
            matches = [match_id]
        else:
            path = f"/api/v1/games/{self.game}/matches/batch"
            items = [{"match_id": str(uuid.uuid4()), **self._match(rng)} for _ in range(5)]
            body = json.dumps({"matches": items}).encode()
            matches = [str(m["match_id"]) for m in items]
        headers = signed_headers(key_id=self.key_id, secret=self.secret, method="POST", path=path, body=body)
        headers["Content-Type"] = "application/json"
        return "POST", path, body, headers, matches

    @staticmethod
    def _read_answer(answer: Answer, raw: bytes, matches: list[str]) -> None:
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if isinstance(data, dict):
            answer.code = str(data.get("code", ""))
        if answer.kind == "batch" and answer.status == 200 and isinstance(data, dict):
            answer.matches = {mid: int(m["http_status"]) for mid, m in zip(matches, data["matches"], strict=True)}
        elif matches:
            answer.matches = dict.fromkeys(matches, answer.status)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def wait_until(check, *, since: float, timeout: float, step: float = 0.1) -> float | None:
    """Call `check()` until it is true: the seconds from `since` (a monotonic time) until it was,
    or None when it still is not `timeout` seconds from now."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return round(time.monotonic() - since, 2)
        time.sleep(step)
    return None


def get_json(port: int, path: str, timeout: float = 2.0) -> tuple[int, dict[str, object]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        raw = response.read()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, {}
    except (OSError, http.client.HTTPException):
        return 0, {}
    finally:
        conn.close()


def manage(*args: str, **env: str) -> str:
    """`python manage.py ARGS` as an operator runs it, with the service's environment; its stdout."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=process_env(**env), capture_output=True, check=True
    )
    return done.stdout.decode()


class ScratchDatabase:
    """A database of the test's own (`drill_<hex>`) on the PostgreSQL server of the test run,
    created, dropped and restored with the client programs as docs/operations.md runs them."""

    def __init__(self) -> None:
        db = connection.settings_dict
        self.name = f"drill_{uuid.uuid4().hex[:12]}"
        self.server = ["-h", str(db["HOST"]), "-p", str(db["PORT"]), "-U", str(db["USER"])]
        self.url = f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/{self.name}"

    def run(self, program: str, *args: str) -> None:
        done = subprocess.run([str(PG_CLIENT_BIN / program), *args], capture_output=True)
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)}: {done.stderr.decode(errors='replace')}")

    def create(self) -> None:
        self.run("createdb", *self.server, self.name)

    def drop(self) -> None:
        self.run("dropdb", *self.server, "--force", "--if-exists", self.name)

    def dump(self, path: Path) -> None:
        self.run("pg_dump", "--format=custom", f"--file={path}", self.url)

    def restore(self, path: Path) -> None:
        """The documented restore: a fresh database of the same name, the dump restored into it."""
        self.drop()
        self.create()
        self.run("pg_restore", "--no-owner", f"--dbname={self.url}", str(path))


class Service:
    """One deployment's processes (beat, worker, web on its own port) with their environment."""

    def __init__(self, **env: str) -> None:
        self.env = env
        self.port = free_port()
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        self.procs = [start_beat(**self.env), start_worker(**self.env), start_web(self.port, **self.env)]

    def stop(self) -> None:
        for proc in self.procs:
            stop(proc)
        self.procs = []

    def alive(self) -> bool:
        return bool(self.procs) and all(proc.poll() is None for proc in self.procs)


def post_signed(
    port: int, path: str, body: bytes, *, key_id: str, secret: str, timeout: float = 30.0
) -> tuple[int, dict[str, str], object]:
    """A match server's signed POST: (status, headers with lower-case names, parsed JSON body)."""
    return signed_http(port, "POST", path, body, key_id=key_id, secret=secret, timeout=timeout)


def send_matches(
    port: int, game: str, key: dict[str, str], matches: list[dict[str, Any]], *, singles: int = 0, batch: int = 250
) -> dict[str, tuple[int, str]]:
    """Each match as a match server sends it (`matches`: batch items, with their match_id): the
    first `singles` one per request (the single-result endpoint), the rest in batches of `batch`.
    Match id -> (its HTTP status, the value of the replay header, "" when absent or batched)."""
    answers: dict[str, tuple[int, str]] = {}
    for match in matches[:singles]:
        body = json.dumps({k: v for k, v in match.items() if k != "match_id"}).encode()
        path = f"/api/v1/games/{game}/matches/{match['match_id']}/results"
        status, headers, _ = post_signed(port, path, body, key_id=key["key_id"], secret=key["secret"])
        answers[str(match["match_id"])] = (status, headers.get("idempotent-replayed", ""))
    rest = matches[singles:]
    for start in range(0, len(rest), batch):
        chunk = rest[start : start + batch]
        body = json.dumps({"matches": chunk}).encode()
        path = f"/api/v1/games/{game}/matches/batch"
        status, _, data = post_signed(port, path, body, key_id=key["key_id"], secret=key["secret"])
        assert status == 200 and isinstance(data, dict), (status, data)
        for match, answer in zip(chunk, data["matches"], strict=True):
            answers[str(match["match_id"])] = (int(answer["http_status"]), "")
    return answers


def board_entries(port: int, game: str, n: int = 1000) -> list[tuple[str, int]]:
    """The current season's global `all` board as the API reads it: (player, score), best first."""
    status, data = get_json(port, f"/api/v1/games/{game}/boards/all/top?n={n}", timeout=10)
    assert status == 200, (status, data)
    return [(e["player_id"], e["score"]) for e in data["entries"]]


def ledger_query(url: str, sql: str, params: list[object] | None = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, params or []).fetchall()


def events_applied(url: str, events: int) -> bool:
    """The ledger at `url` holds `events` accepted results, every one applied."""
    [(stored, unapplied)] = ledger_query(
        url,
        f"SELECT count(*), count(o.event_id) FROM {ScoreEvent._meta.db_table} e "
        f"LEFT JOIN {UnappliedEvent._meta.db_table} o ON o.event_id = e.id WHERE e.status = %s",
        [EventStatus.ACCEPTED.value],
    )
    return bool(stored == events and unapplied == 0)


def ledger_totals(url: str) -> Counter[str]:
    """Accepted points per player in the ledger at `url` (one game, one season)."""
    rows = ledger_query(
        url,
        f"SELECT player_id, sum(points) FROM {ScoreEvent._meta.db_table} WHERE status = %s GROUP BY 1",
        [EventStatus.ACCEPTED.value],
    )
    return Counter({str(player): int(points) for player, points in rows})


def boards_equal_ledger(game: str, **env: str) -> dict[str, Any]:
    """`reconcile_boards GAME --full --dry-run` under a service's environment: every board of the
    game compared with the ledger, member by member, and no applied result missing from Redis.
    Asserts that nothing differs; returns the game's report."""
    lines = [json.loads(line) for line in manage("reconcile_boards", game, "--full", "--dry-run", **env).splitlines()]
    unreflected, report = lines[0]["unreflected"], lines[1]
    assert unreflected["missing"] == 0, unreflected
    assert report["game"] == game and report["skipped"] == "" and report["entries"] > 0, report
    assert (report["drift"], report["candidates"], report["pending"]) == (0, 0, 0), report
    return dict(report)
