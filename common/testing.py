"""Shared test fixtures' machinery: the service's real processes (Celery worker and beat, the ASGI
web server, the webhook dispatcher) started against the test run's own database and Redis, and
stopped or killed; what the tests of those processes share: waiting with a bound (`wait_for`),
processes and their children (`alive`, `children`, `sigkill`), the apply queue gone quiet
(`broker_idle`), and a signed request to a running web server (`signed_http`).

No app is imported: the processes are named by their command lines (`celery -A leaderboard_site`,
`python -m leaderboard_site.serve`, `manage.py dispatch_events`), as an operator would start them.
"""

import asyncio
import atexit
import functools
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlencode

from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection
from django.http import HttpResponse

from common.redis import broker_key
from common.redis import client as redis_client
from common.signing import signed_headers

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def database_url(database: dict[str, object]) -> str:
    """A DATABASES entry back as a URL (every node of a formation, its libpq parameters but not
    the pool): what a process started by a test is given as DATABASE_URL, so that it reaches the
    same database as the test however DATABASE_URL named it."""
    user = quote(str(database["USER"]), safe="")
    password = f":{quote(str(database['PASSWORD']), safe='')}" if database.get("PASSWORD") else ""
    hosts, ports = str(database["HOST"]).split(","), str(database["PORT"]).split(",")
    pairs = zip(hosts, ports, strict=True)
    servers = ",".join(f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in pairs)
    given = database.get("OPTIONS")
    # Not the pool, nor connect_timeout (the process takes DATABASE_CONNECT_TIMEOUT_S as its own).
    skip = {"pool", "connect_timeout"}
    options = {k: str(v) for k, v in given.items() if k not in skip} if isinstance(given, dict) else {}
    query = f"?{urlencode(options, quote_via=quote)}" if options else ""  # a space as %20: libpq reads no "+"
    return f"postgresql://{user}{password}@{servers}/{quote(str(database['NAME']), safe='')}{query}"


def process_env(**extra: str) -> dict[str, str]:
    """The environment of a service process: this test run's database, private Redis and metrics
    folder (settings/test.py: what the processes count shows on each other's /metrics, never on a
    `make run`'s), a fast relay, quiet logs (TEST_PROCESS_LOG_LEVEL=INFO, with TEST_PROCESS_LOGS,
    to see what they did)."""
    db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="leaderboard_site.settings.base",
        DATABASE_URL=database_url(db),
        REDIS_URL=settings.REDIS_URL,
        CELERY_BROKER_URL=settings.REDIS_URL,
        PROMETHEUS_MULTIPROC_DIR=str(settings.PROMETHEUS_MULTIPROC_DIR),
        CELERY_BEAT_RELAY_INTERVAL_S="1",
        SCORING_RELAY_AFTER_S="2",
        LOG_LEVEL=os.environ.get("TEST_PROCESS_LOG_LEVEL", "WARNING"),
    )
    env.update(extra)
    return env


def _output(name: str) -> Any:
    """Where a process's output goes: nowhere, or with TEST_PROCESS_LOGS=DIR set, DIR/name-PID.log
    (for debugging a test of real processes)."""
    folder = os.environ.get("TEST_PROCESS_LOGS")
    if not folder:
        return subprocess.DEVNULL
    Path(folder).mkdir(parents=True, exist_ok=True)
    return open(Path(folder) / f"{name}-{os.getpid()}-{uuid.uuid4().hex[:6]}.log", "ab")


def start_celery(args: list[str], **env: str) -> subprocess.Popen[bytes]:
    """`env`: settings of the process that differ from `process_env`'s (another Redis, database)."""
    output = _output(args[0])
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "leaderboard_site", *args],
        cwd=ROOT,
        env=process_env(**env),
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: SIGKILL reaches the pool children too
    )
    if output is not subprocess.DEVNULL:
        output.close()
    return proc


def start_worker(*extra_args: str, **env: str) -> subprocess.Popen[bytes]:
    """A Celery worker on the `scoring` queue; `extra_args` go on its command line (`--include`)."""
    name = f"it-{uuid.uuid4().hex[:6]}@%h"
    return start_celery(
        [
            "worker",
            "-Q",
            "scoring",
            "--concurrency",
            "2",
            "-l",
            "warning",
            "--without-mingle",
            "--without-gossip",
            "-n",
            name,
            *extra_args,
        ],
        **env,
    )


@functools.cache
def _beat_schedules() -> Path:
    """A folder of the test run's own for beat's schedule files, removed when the run ends."""
    folder = Path(tempfile.mkdtemp(prefix="lb-test-beat-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def start_beat(**env: str) -> subprocess.Popen[bytes]:
    schedule = _beat_schedules() / f"beat-{uuid.uuid4().hex[:6]}"
    return start_celery(["beat", "-l", "warning", "-s", str(schedule)], **env)


def _launch_web(port: int, **env: str) -> subprocess.Popen[bytes]:
    output = _output("web")
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "leaderboard_site.serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        env=process_env(**env),
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    if output is not subprocess.DEVNULL:
        output.close()
    return web


def _wait_live(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health/live", timeout=1)
            return
        except OSError:
            time.sleep(0.2)


def start_web(port: int, **env: str) -> subprocess.Popen[bytes]:
    """The ASGI web server on 127.0.0.1:`port`; returns once /health/live answers (or 30 s).
    `env` as for `start_celery`."""
    [web] = start_webs([port], **env)
    return web


def start_webs(ports: list[int], **env: str) -> list[subprocess.Popen[bytes]]:
    """A web server on each port, all started at once; returns once each /health/live answers
    (or 30 s)."""
    webs = [_launch_web(port, **env) for port in ports]
    deadline = time.monotonic() + 30
    for port in ports:
        _wait_live(port, deadline)
    return webs


def start_dispatcher(**env: str) -> subprocess.Popen[bytes]:
    """The webhook dispatcher (`manage.py dispatch_events`); `env` as for `start_celery`
    (WEBHOOK_* settings, say)."""
    output = _output("dispatcher")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "dispatch_events"],
        cwd=ROOT,
        env=process_env(**env),
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    if output is not subprocess.DEVNULL:
        output.close()
    return proc


def kill_hard(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            kill_hard(proc)


def run_together(target: Callable[[int], None], threads: int) -> None:
    """Call `target(i)` for i in range(threads), each in its own thread, all released at the same
    moment (a barrier), and wait for them all. Each thread closes its database connection."""
    barrier = threading.Barrier(threads)

    def run(i: int) -> None:
        barrier.wait()
        try:
            target(i)
        finally:
            connection.close()

    started = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 30.0, every: float = 0.05) -> T:
    """Call `check()` until it returns something true, and return that; an AssertionError naming
    `what` when it has not within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(every)


def alive(pid: int) -> bool:
    """The process runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def children(pid: int) -> set[int]:
    """The live child processes of `pid`."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(entry))
    return found


def sigkill(pid: int) -> float:
    """SIGKILL one process; returns when (monotonic)."""
    os.kill(pid, signal.SIGKILL)
    return time.monotonic()


def broker_idle(since: float) -> bool:
    """Every apply task sent so far has run: none waits in the queue, none delivered since `since`
    (Unix time) is unacked (the tasks ack late). A task that a SIGKILLed worker had taken stays
    unacked until the visibility timeout (600 s) gives it back; it cannot run before then, so it
    does not count. Twice, 0.1 s apart: a message between the two is in neither for an instant."""
    for _ in range(2):
        pipe = redis_client().pipeline()
        pipe.llen(broker_key("scoring"))
        pipe.zcount(broker_key("unacked_index"), since, "+inf")
        waiting, unacked = pipe.execute()
        if waiting or unacked:
            return False
        time.sleep(0.1)
    return True


def signed_http(
    port: int, method: str, path: str, body: bytes, *, key_id: str, secret: str, timeout: float = 30.0
) -> tuple[int, dict[str, str], Any]:
    """A signed request (a match server's, a studio backend's) to the web server on `port`:
    (status, headers with lower-case names, the parsed JSON body or None)."""
    headers = signed_headers(key_id=key_id, secret=secret, method=method, path=path, body=body)
    headers["Content-Type"] = "application/json"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        answer_headers = {name.lower(): value for name, value in response.getheaders()}
        return response.status, answer_headers, json.loads(raw) if raw else None
    finally:
        conn.close()


def asgi_request(
    app: Any,
    path: str,
    query: str = "",
    *,
    client: tuple[str, int] = ("127.0.0.1", 50000),
    method: str = "GET",
    body: bytes = b"",
    headers: Sequence[tuple[str, str]] = (),
) -> HttpResponse:
    """A request through an ASGI application, in this thread's test transaction, as a Django test
    response (`.status_code`, `.content`, `.json()`, headers, `.raw_headers` in order)."""
    [response] = asgi_requests_together(
        app, [{"path": path, "query": query, "client": client, "method": method, "body": body, "headers": headers}]
    )
    return response


def asgi_requests_together(app: Any, requests: list[dict[str, Any]], *, at_once: int = 0) -> list[HttpResponse]:
    """Several requests through an ASGI application at once, on one event loop (as one server
    process receives them); each dict holds `asgi_request`'s arguments after the app. With
    `at_once`, that many at a time, one group after the other (on the same loop)."""

    async def all_of() -> list[HttpResponse]:
        size = at_once or len(requests) or 1
        answers: list[HttpResponse] = []
        for start in range(0, len(requests), size):
            group = requests[start : start + size]
            answers += await asyncio.gather(*(_asgi_exchange(app, **request) for request in group))
        return answers

    # As Django's own test clients do: the request does not close the test's connection (its
    # transaction holds the test's data).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        return async_to_sync(all_of)()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


async def _asgi_exchange(
    app: Any,
    *,
    path: str,
    query: str = "",
    client: tuple[str, int] = ("127.0.0.1", 50000),
    method: str = "GET",
    body: bytes = b"",
    headers: Sequence[tuple[str, str]] = (),
) -> HttpResponse:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": unquote(path),
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"testserver"), *((n.lower().encode(), v.encode()) for n, v in headers)],
        "client": client,
        "server": ("testserver", 80),
    }
    sent: list[dict[str, Any]] = []
    received: list[bool] = []

    async def receive() -> dict[str, Any]:
        if not received:
            received.append(True)
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected until the answer is sent
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    response = HttpResponse(content, status=start["status"])
    for name in list(response.headers):
        del response.headers[name]
    for name, value in start["headers"]:
        response.headers[name.decode("latin-1")] = value.decode("latin-1")
    response.json = lambda: json.loads(content)  # type: ignore[attr-defined]
    response.raw_headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in start["headers"]]  # type: ignore[attr-defined]
    return response
