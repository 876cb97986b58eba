"""Test helpers of events out (for its own tests, the apps above it and the benchmark): webhook
receivers that are real HTTP servers on loopback, a signature check as a receiver does it, and the
dispatcher run in a thread of the test process."""

import asyncio
import contextlib
import hmac
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from common.signing import HEADER_SIGNATURE, HEADER_TIMESTAMP, signature_compute

from .dispatcher import HEADER_EVENT, Dispatcher

HANG = -1  # an answer that never comes (the receiver holds the request until it is stopped)


@dataclass(frozen=True)
class Received:
    """One request as the receiver saw it."""

    at: float  # time.monotonic() when it arrived
    path: str  # path and query, as sent
    headers: dict[str, str]
    body: bytes
    answered: int  # the status it got (HANG: none)

    @property
    def event_id(self) -> int:
        return int(self.headers[HEADER_EVENT])


def signature_valid(*, secret: str, request: Received, max_skew_s: int = 300) -> bool:
    """What a receiver checks: the timestamp within `max_skew_s` of its clock, and the signature
    over timestamp, POST, path and query, and the raw body, with the webhook's secret."""
    timestamp = request.headers.get(HEADER_TIMESTAMP, "")
    if not timestamp.isdigit() or abs(int(timestamp) - time.time()) > max_skew_s:
        return False
    expected = signature_compute(
        secret=secret, timestamp=timestamp, method="POST", path=request.path, body=request.body
    )
    return hmac.compare_digest(expected, request.headers.get(HEADER_SIGNATURE, ""))


Answer = Callable[[int, "Received"], int]  # (n-th request from 0, the request) -> status, or HANG


class Receiver:
    """An HTTP server on 127.0.0.1 that records every request. `answer` gives each one's status
    (default 200); `body` the answer's body. `down()` closes it (connections refused) and `up()`
    opens it again on the same port. A HANG request is held until `hang_s` has passed or the
    receiver goes down."""

    def __init__(self, answer: Answer | None = None, *, body: bytes = b"ok", hang_s: float = 60.0) -> None:
        self.answer = answer or (lambda n, request: 200)
        self.body = body
        self.hang_s = hang_s
        self.received: list[Received] = []
        self.lock = threading.Lock()
        self.released = threading.Event()
        self.server: ThreadingHTTPServer | None = None
        self.port = 0
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/leaderboard?source=test"

    def up(self) -> None:
        self.released.clear()
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        server.daemon_threads = True
        self.port = server.server_address[1]
        self.server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def down(self) -> None:
        self.released.set()  # held requests end (without an answer)
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def event_ids(self, *, status: int | None = 200) -> list[int]:
        """The event ids of the requests answered `status` (None: every request), in arrival order."""
        with self.lock:
            return [r.event_id for r in self.received if status is None or r.answered == status]

    def wait_for(self, check: Callable[["Receiver"], bool], timeout: float) -> float:
        """Seconds until `check(self)` holds; AssertionError after `timeout`."""
        started = time.monotonic()
        while not check(self):
            if time.monotonic() - started > timeout:
                raise AssertionError(f"not within {timeout} s; received {len(self.received)} requests")
            time.sleep(0.02)
        return time.monotonic() - started

    def __enter__(self) -> "Receiver":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.down()


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            headers = {name: value for name, value in self.headers.items()}
            with receiver.lock:
                n = len(receiver.received)
            probe = Received(time.monotonic(), self.path, headers, body, 0)
            status = receiver.answer(n, probe)
            with receiver.lock:
                receiver.received.append(Received(probe.at, self.path, headers, body, status))
            if status == HANG:
                receiver.released.wait(receiver.hang_s)
                self.close_connection = True
                return
            try:
                self.send_response(status)
                self.send_header("Content-Length", str(len(receiver.body)))
                self.end_headers()
                self.wfile.write(receiver.body)
            except (BrokenPipeError, ConnectionResetError):  # the client read what it wanted and left
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def dispatcher_running() -> Iterator[Dispatcher]:
    """The dispatcher on an event loop in a thread of this process, against the test database
    (a `transaction=True` test), stopped and joined on exit."""
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        holder["loop"] = loop
        dispatcher = Dispatcher()
        holder["dispatcher"] = dispatcher
        ready.set()
        loop.run_until_complete(dispatcher.run())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield holder["dispatcher"]
    finally:
        holder["loop"].call_soon_threadsafe(holder["dispatcher"].stop)
        thread.join(30)
