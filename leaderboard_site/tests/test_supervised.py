"""`make run` keeps every process up by itself (issue 11, item 1).

The stack as `scripts/run.sh` starts it (supervisord in the foreground, two web processes sharing the
port, the Celery worker with two pool children, beat) on a free port, against the test database
and this run's private Redis. SIGKILL, one after the other, of a web process, the worker's main
process, one pool child and beat: each time the other processes keep their pids and keep serving,
and the killed one is back, serving, within 5 s of the kill (measured). Then SIGINT, as Ctrl-C
sends, stops every process.
"""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
import xmlrpc.client
from pathlib import Path
from typing import Any

import pytest
from supervisor.xmlrpc import SupervisorTransport

from common.signing import signed_headers
from common.testing import ROOT, alive, broker_idle, children, free_port, process_env, sigkill, wait_for
from scoring.models import ScoreEvent, UnappliedEvent
from scoring.testing import make_game, make_key, match_body, outbox_restore

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

RESTART_BOUND_S = 5.0  # the bound: a killed process is back within 5 s
PROGRAMS = ("web-0", "web-1", "worker", "beat", "events")


class Stack:
    """scripts/run.sh (DEMO=0) on a free port, with its run files and logs under `run_dir`."""

    def __init__(self, run_dir: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.run_dir = run_dir
        env = process_env(
            PORT=str(self.port),
            HOST="127.0.0.1",
            DEMO="0",
            RUN_DIR=str(run_dir),
            LOG_DIR=str(run_dir / "log"),
            WEB_CONCURRENCY="2",
            WORKER_CONCURRENCY="2",
            WORKER_NAME=f"sup-{uuid.uuid4().hex[:6]}",
        )
        self.out = open(run_dir / "run.out", "wb")  # closed in stop()
        self.proc = subprocess.Popen(
            ["bash", "scripts/run.sh"],
            cwd=ROOT,
            env=env,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.seen: set[int] = set()

    def rpc(self) -> Any:
        transport = SupervisorTransport(None, None, f"unix://{self.run_dir / 'supervisord.sock'}")
        return xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport).supervisor

    def info(self) -> dict[str, dict[str, Any]]:
        try:
            return {p["name"]: p for p in self.rpc().getAllProcessInfo()}
        except (OSError, xmlrpc.client.Fault):
            return {}

    def running(self) -> dict[str, int] | None:
        """The pid of each process when all of them are RUNNING."""
        info = self.info()
        if all(info.get(name, {}).get("statename") == "RUNNING" for name in PROGRAMS):
            pids = {name: int(info[name]["pid"]) for name in PROGRAMS}
            self.seen.update(pids.values())
            return pids
        return None

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=2) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except OSError:
            return 0, b""

    def live(self) -> bool:
        return self.get("/health/live")[0] == 200

    def submit(self, key: Any, player: str, points: int) -> int:
        path = f"/api/v1/games/arena/matches/{uuid.uuid4()}/results"
        body = json.dumps(match_body([{"player_id": player, "points": points}])).encode()
        headers = signed_headers(key_id=key.key_id, secret=key.secret, method="POST", path=path, body=body)
        request = urllib.request.Request(
            self.url + path, data=body, method="POST", headers={"Content-Type": "application/json", **headers}
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return 0

    def score(self, player: str) -> int | None:
        status, body = self.get(f"/api/v1/games/arena/boards/all/players/{player}")
        return json.loads(body)["score"] if status == 200 else None

    def on_board(self, player: str, points: int) -> bool:
        return self.score(player) == points

    def stop(self) -> None:
        """SIGINT, as Ctrl-C sends; then nothing this stack started may be left."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()

    def kill_leftovers(self) -> list[int]:
        left = [pid for pid in self.seen if alive(pid)]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        return left


def mark_unapplied(event: ScoreEvent) -> None:
    """As if its apply task were lost: only a task that beat sends (the outbox relay, or the recovery
    of boards that Redis lost) applies it again; no request or apply task of another event does."""
    outbox_restore([event])


def applied_again(event: ScoreEvent) -> bool:
    return not UnappliedEvent.objects.filter(event_id=event.pk).exists()


def test_each_killed_process_is_back_within_5_s_while_the_others_serve(tmp_path):
    game = make_game()
    key = make_key(game)
    stack = Stack(tmp_path)
    took: dict[str, float] = {}
    try:
        pids = wait_for("web, worker and beat RUNNING", stack.running, timeout=60)
        wait_for("/health/ready 200", lambda: stack.get("/health/ready")[0] == 200, timeout=60)
        assert len(children(pids["worker"])) == 2
        assert stack.submit(key, "p0", 10) == 202
        wait_for("p0 on the board", lambda: stack.on_board("p0", 10))
        first = ScoreEvent.objects.get(player_id="p0")

        # (a) A web process. The other one keeps serving on the port meanwhile (a socket each,
        # SO_REUSEPORT: leaderboard_site/serve.py), and so do worker and beat: an event whose apply
        # task is lost is sent again by beat's relay and applied by the worker, once.
        killed = sigkill(pids["web-0"])
        mark_unapplied(first)
        assert wait_for("the other web process answering", stack.live, timeout=2)
        wait_for("web-0 back", lambda: (stack.running() or {}).get("web-0", pids["web-0"]) != pids["web-0"])
        took["web"] = time.monotonic() - killed
        now = stack.running()
        assert now and now["web-0"] != pids["web-0"] and not alive(pids["web-0"])
        assert (now["web-1"], now["worker"], now["beat"]) == (pids["web-1"], pids["worker"], pids["beat"])
        wait_for("the lost apply sent again by beat, applied by the worker", lambda: applied_again(first))
        assert stack.score("p0") == 10  # applied again, counted once
        assert stack.submit(key, "p1", 11) == 202
        wait_for("p1 on the board", lambda: stack.on_board("p1", 11))
        pids = now

        # (b) The worker's main process (its pool children exit with it). The web keeps serving:
        # it answers and accepts a result (durable in the ledger) while no worker runs.
        old_worker = {pids["worker"], *children(pids["worker"])}
        killed = sigkill(pids["worker"])
        assert stack.live()
        assert stack.submit(key, "p2", 12) == 202
        wait_for("the result accepted while the worker was down on the board", lambda: stack.on_board("p2", 12))
        took["worker"] = time.monotonic() - killed
        now = wait_for("worker RUNNING", stack.running)
        worker_back = time.time()  # tasks the killed worker had taken stay unacked (broker_idle)
        assert now["worker"] not in old_worker and (now["web-0"], now["beat"]) == (pids["web-0"], pids["beat"])
        pids = now
        wait_for("two pool children", lambda: len(children(pids["worker"])) == 2)

        # (c) One pool child: the worker's main process replaces it; nobody else restarts.
        pool = children(pids["worker"])
        victim = min(pool)
        killed = sigkill(victim)
        assert stack.submit(key, "p3", 13) == 202
        wait_for("a new pool child", lambda: len(children(pids["worker"]) - pool) == 1 and not alive(victim))
        took["pool child"] = time.monotonic() - killed
        wait_for("p3 on the board", lambda: stack.on_board("p3", 13))
        assert stack.running() == pids

        # (d) Beat. Web and worker keep serving: a result is accepted and applied while it is down.
        # Back means its schedule runs again: a lost apply, marked once every task the old beat sent
        # has run, is sent again.
        second = ScoreEvent.objects.get(player_id="p1")
        killed = sigkill(pids["beat"])
        assert stack.submit(key, "p4", 14) == 202
        wait_for("p4 on the board while beat is down", lambda: stack.on_board("p4", 14))
        wait_for("every task of the old beat run", lambda: broker_idle(since=worker_back))
        mark_unapplied(second)
        wait_for("the lost apply sent again by the new beat", lambda: applied_again(second))
        took["beat"] = time.monotonic() - killed
        now = wait_for("beat RUNNING", stack.running)
        assert now["beat"] != pids["beat"] and (now["web-0"], now["worker"]) == (pids["web-0"], pids["worker"])
        assert stack.score("p1") == 11  # counted once
        pids = now

        slow = {name: round(s, 2) for name, s in took.items() if s > RESTART_BOUND_S}
        assert not slow, f"back after more than {RESTART_BOUND_S} s: {slow} (all: {took})"

        # Ctrl-C stops everything: supervisord, the web processes, the pool children, beat.
        for pid in list(pids.values()):
            stack.seen.update(children(pid))
        stack.stop()
        assert stack.proc.returncode is not None
        assert wait_for("every process gone", lambda: not any(alive(p) for p in stack.seen), timeout=10)
    finally:
        stack.stop()
        left = stack.kill_leftovers()
        print(f"back after (s): { {k: round(v, 2) for k, v in took.items()} }")
    assert not left, f"still running after the stack stopped: {left}"
