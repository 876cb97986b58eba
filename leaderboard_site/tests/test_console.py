"""`make run`'s console: text lines a person can read (time, level, process, logger, message,
request id), the demo stream's summary every 10 s instead of a line per match (the web leaves out
its line for each demo request, the worker its line for each apply task of demo results), and the banner with
the URLs and the demo key printed last, once the web answers, and again by `make urls`.

The last test runs scripts/run.sh on a pseudo-terminal, as a person's `make run` does."""

import io
import json
import logging
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from anticheat.models import ServerKey
from common import logs
from common.request_ids import RequestIdFilter, request_ids_bound
from common.signing import signed_headers
from common.testing import ROOT, free_port, process_env, start_web, stop
from scoring.demo import DemoTally
from scoring.models import ScoreEvent
from scoring.tasks import apply_events
from scoring.testing import make_game, make_key, match_body, submit_direct

TEXT_LINE = re.compile(r"\d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) +(\S+) +(\S+)  (.*)")


def formatted(formatter: logging.Formatter, message: str, *, level: int = logging.INFO, ids: tuple = ()) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("scoring.reporting.test")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    try:
        with request_ids_bound(ids):
            logger.log(level, message)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue().rstrip("\n")


# Serial: outside supervisord the process is named after sys.argv[0], `pytest` only in pytest's own
# process (an xdist worker's argv[0] is `-c`).
@pytest.mark.serial
def test_a_text_line_has_the_time_level_process_logger_message_and_request_id(monkeypatch):
    monkeypatch.setenv("SUPERVISOR_PROCESS_NAME", "web-0")  # supervisord sets it for each process
    line = formatted(logs.TextFormatter(), "write demo: 1 matches", ids=("5f0c9e1b",))
    assert TEXT_LINE.fullmatch(line), line
    assert line[12:] == " INFO    web-0  scoring.reporting.test  write demo: 1 matches  request_id=5f0c9e1b"
    line = formatted(logs.TextFormatter(), "boards recovered", level=logging.WARNING)
    assert line[12:] == " WARNING web-0  scoring.reporting.test  boards recovered"  # no request: no id
    monkeypatch.delenv("SUPERVISOR_PROCESS_NAME")
    assert " pytest scoring.reporting.test " in formatted(logs.TextFormatter(), "x")  # outside supervisord


def test_only_the_info_lines_of_the_demo_streams_own_requests_are_left_out():
    quiet = logs.DemoWritesQuiet()

    def passes(level: int, ids: tuple[str, ...]) -> bool:
        record = logging.LogRecord("scoring.reporting", level, __file__, 1, "write demo", None, None)
        with request_ids_bound(ids):
            return quiet.filter(record)

    assert not passes(logging.INFO, ("demo-1",)) and not passes(logging.INFO, ("demo-1", "demo-2"))
    assert passes(logging.WARNING, ("demo-1",))  # a warning always shows
    assert passes(logging.INFO, ("mine-1",)) and passes(logging.INFO, ("demo-1", "mine-1"))
    assert passes(logging.INFO, ())


def test_the_demo_tally_sums_up_each_interval_once():
    tally = DemoTally(since=100.0)
    accepted = {"results": [{"status": "accepted"}, {"status": "accepted"}]}
    tally.answered(status=202, body=accepted)
    tally.answered(status=202, body={"results": [{"status": "pending_review"}, {"status": "accepted"}]})
    tally.answered(status=429, body={})
    assert not tally.due(now=109.9, every_s=10)
    assert tally.due(now=110.0, every_s=10)
    assert tally.summary(now=110.0) == (
        "demo: 2 matches, 4 results sent in the last 10 s (accepted 3, pending_review 1); total 2 matches;"
        " 1 refused (HTTP 429 x1)"
    )
    assert not tally.due(now=115.0, every_s=10)  # a new window from the summary
    for _ in range(1500):
        tally.answered(status=202, body=accepted)
    assert tally.summary(now=120.0) == (
        "demo: 1,500 matches, 3,000 results sent in the last 10 s (accepted 3,000); total 1,502 matches"
    )
    assert tally.summary(now=130.0) is None  # nothing sent: nothing to say


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_the_demo_stream_logs_one_summary_and_the_web_only_the_lines_of_other_requests(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TEST_PROCESS_LOGS", str(tmp_path))
    call_command("seed_demo", players=20, matches=5, stdout=io.StringIO())
    port = free_port()
    web = start_web(port, DEMO="1", LOG_FORMAT="text", LOG_LEVEL="INFO")
    try:
        with caplog.at_level(logging.DEBUG, logger="scoring.demo"):
            call_command(
                "stream_demo",
                url=f"http://127.0.0.1:{port}",
                count=6,
                interval=0.05,
                summary_s=1000,
                stdout=io.StringIO(),
            )
        lines = [r.getMessage() for r in caplog.records if r.name == "scoring.demo"]
        assert len(lines) == 1, lines  # no line per match: one summary, at the end
        assert re.fullmatch(
            r"demo: 6 matches, \d+ results sent in the last \d+ s \(accepted \d+.*\); total 6 matches", lines[0]
        )

        key = ServerKey.objects.filter(label="demo").first()  # a match server's request, its own id
        path = f"/api/v1/games/demo/matches/{uuid.uuid4()}/results"
        body = json.dumps(match_body([{"player_id": "p0001", "points": 5}])).encode()
        headers = signed_headers(key_id=key.key_id, secret=key.secret, method="POST", path=path, body=body)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}{path}", data=body, method="POST", headers={**headers, "X-Request-ID": "mine-1"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 202
        deadline = time.monotonic() + 10
        while "request_id=mine-1" not in web_log(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop(web)
    written = [line for line in web_log(tmp_path).splitlines() if "scoring.reporting" in line]
    assert len(written) == 1 and written[0].endswith("  request_id=mine-1"), written
    assert TEXT_LINE.fullmatch(written[0]) and " write demo: 1 matches " in written[0]
    assert "request_id=demo-" not in web_log(tmp_path)


def web_log(folder: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in folder.glob("web-*.log"))


@pytest.mark.django_db
def test_under_the_demo_the_worker_leaves_out_the_apply_lines_of_demo_results_only(caplog):
    """The worker logs each apply task at INFO (production as it was); with DEMO on, the line of a
    task whose results all came from the demo stream is left out, as the web's per-request line."""
    settings_of_demo = subprocess.run(
        [
            sys.executable,
            "-c",
            "from leaderboard_site.settings import observability as o; print(o.LOGGING['loggers']['scoring.tasks'])",
        ],
        cwd=ROOT,
        env={**os.environ, "DEMO": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "demo_writes_quiet" in settings_of_demo.stdout
    game = make_game()
    key = make_key(game)
    submit_direct(
        game, key, match_body([{"player_id": "a", "points": 3}, {"player_id": "b", "points": 2}]), now=timezone.now()
    )
    ids = list(ScoreEvent.objects.values_list("id", flat=True))
    tasks_logger = logging.getLogger("scoring.tasks")
    quiet = logs.DemoWritesQuiet()
    tasks_logger.addFilter(quiet)
    try:
        with caplog.at_level(logging.INFO, logger="scoring.tasks"):
            with request_ids_bound(["demo-1", "demo-2"]):
                apply_events(ids)
            with request_ids_bound(["demo-3", "mine-1"]):
                apply_events(ids)  # delivered again: nothing left to apply
    finally:
        tasks_logger.removeFilter(quiet)
    [line] = [r for r in caplog.records if r.name == "scoring.tasks"]
    assert (line.levelno, line.getMessage().split(";")[0]) == (
        logging.INFO,
        "apply task: 2 events, 0 applied, 0 skipped, 0 paused, 0 overflow",
    )


class Console:
    """scripts/run.sh (DEMO=1) with its output on a pseudo-terminal, as `make run` in a terminal:
    everything it and supervisord write, read as it comes (a full terminal would block them)."""

    def __init__(self, run_dir: Path):
        self.port = free_port()
        self.run_dir = run_dir
        self.env = process_env(
            PORT=str(self.port),
            HOST="127.0.0.1",
            DEMO="1",
            RUN_DIR=str(run_dir),
            WEB_CONCURRENCY="1",
            WORKER_CONCURRENCY="1",
            WORKER_NAME=f"console-{uuid.uuid4().hex[:6]}",
            LOG_LEVEL="INFO",
        )
        for name in ("LOG_FORMAT", "LOG_DIR"):  # run.sh decides: text, on a terminal
            self.env.pop(name, None)
        master, terminal = pty.openpty()
        self.proc = subprocess.Popen(
            ["bash", "scripts/run.sh"],
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=terminal,
            stderr=terminal,
            start_new_session=True,  # a process group of its own, as a terminal's foreground job
        )
        os.close(terminal)
        self.out = bytearray()
        self.reader = threading.Thread(target=self._read, args=(master,), daemon=True)
        self.reader.start()

    def _read(self, master: int) -> None:
        try:
            while chunk := os.read(master, 65536):
                self.out += chunk
        except OSError:  # EIO: every writer has closed the terminal
            pass
        finally:
            os.close(master)

    def text(self) -> str:
        return bytes(self.out).decode(errors="replace").replace("\r\n", "\n")

    def wait_for(self, what: str, check, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, f"{what}: not within {timeout} s\n{self.text()}"
            time.sleep(0.1)

    def urls(self) -> subprocess.CompletedProcess[str]:
        """`make urls`."""
        return subprocess.run(
            ["bash", "scripts/run.sh", "urls"], cwd=ROOT, env=self.env, capture_output=True, text=True
        )

    def processes(self) -> set[int]:
        """Every process of this run: supervisord and all it started inherit RUN_DIR."""
        mark = f"RUN_DIR={self.run_dir}".encode()
        found = set()
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and mark in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    found.add(int(entry))
            except OSError:
                continue
        return found


def submit(port: int, key_id: str, secret: str, request_id: str) -> int:
    path = f"/api/v1/games/demo/matches/{uuid.uuid4()}/results"
    body = json.dumps(match_body([{"player_id": "p0002", "points": 7}])).encode()
    headers = signed_headers(key_id=key_id, secret=secret, method="POST", path=path, body=body)
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=body, method="POST", headers={**headers, "X-Request-ID": request_id}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


@pytest.mark.serial
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(90)
def test_make_run_on_a_terminal_prints_text_lines_then_the_banner_last_and_make_urls_again(tmp_path):
    console = Console(tmp_path)
    banner_file = tmp_path / "banner.txt"
    try:
        console.wait_for("the banner", lambda: "Leaderboard service on" in console.text(), timeout=45)
        before = console.text().split("\n  Leaderboard service on", 1)[0]
        # Last: after supervisord started the processes and the web answered.
        assert "success: web-0 entered RUNNING state" in before, before
        started = [m for m in map(TEXT_LINE.fullmatch, before.splitlines()) if m and m[2] == "web-0"]
        assert any(m[4].startswith("Started server process") for m in started), before
        assert not [line for line in before.splitlines() if line.startswith("{")]  # no JSON
        saved = banner_file.read_text()
        assert banner_file.stat().st_mode & 0o777 == 0o600  # it holds the demo secret
        assert console.text().count(saved) == 1
        url = f"http://127.0.0.1:{console.port}"
        for where in ("/games/demo/", "/admin/", "/api/docs/"):
            assert f"{url}{where}" in saved
        key_id, secret = re.search(r"demo key   : (\S+)\n    secret     : (\S+)\n", saved).groups()
        assert ServerKey.objects.get(key_id=key_id, label="demo").secret == secret
        assert f"scripts/submit.py --url {url} --game demo" in saved

        again = console.urls()
        assert (again.returncode, again.stdout) == (0, saved)

        # The demo stream's requests leave no line in the web; a match server's does, in text.
        assert submit(console.port, key_id, secret, "mine-2") == 202
        console.wait_for("the web's line", lambda: "request_id=mine-2" in console.text(), timeout=10)
        written = [line for line in console.text().splitlines() if "scoring.reporting" in line]
        assert len(written) == 1 and TEXT_LINE.fullmatch(written[0]), written
        assert " web-0  scoring.reporting  write demo: 1 matches " in written[0]
        assert "request_id=demo-" not in console.text()

        running = console.processes()
        assert len(running) >= 6, running  # supervisord, web-0, worker and its pool child, beat, demo
    finally:
        if console.proc.poll() is None:
            os.killpg(console.proc.pid, signal.SIGINT)  # Ctrl-C
        try:
            console.proc.wait(timeout=30)
        finally:
            console.wait_for("every process of the run gone", lambda: not console.processes(), timeout=10)
            for pid in console.processes():
                os.kill(pid, signal.SIGKILL)
    assert console.proc.returncode == 0
    gone = console.urls()
    assert gone.returncode == 1 and "not running" in gone.stderr and not gone.stdout
