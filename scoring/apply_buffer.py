"""Accepted events on their way to the apply queue, gathered for a moment per web process.

A task per request would cost the worker a task per request: a single-result POST makes a task of
one event, and the worker's fixed cost per task (a message, two ledger statements, a Redis round
trip) is paid for every one. `apply_soon` instead gathers the events every request of the process
commits within SCORING_ENQUEUE_LINGER_MS, and a flusher thread sends them as tasks of up to
ENQUEUE_CHUNK events; a full chunk goes at once, from the request's own thread.

Nothing here has to be durable: the events are in the ledger, unapplied, before they get here. If
the process dies with events still gathered, the relay (scoring.relay_unapplied, on beat) sends
them after SCORING_RELAY_AFTER_S, as it does for a lost task.
"""

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

Send = Callable[[list[int]], None]


class ApplyBuffer:
    def __init__(self, *, linger_s: float, chunk: int, send: Send) -> None:
        self.linger_s = linger_s
        self.chunk = chunk
        self._send = send
        self._reset()
        atexit.register(self.flush)

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._ids: list[int] = []
        self._thread: threading.Thread | None = None

    def add(self, event_ids: list[int]) -> None:
        if not event_ids:
            return
        if self._pid != os.getpid():  # a forked child: the parent's thread and lock are not ours
            self._reset()
        full: list[int] = []
        with self._lock:
            self._ids.extend(event_ids)
            if len(self._ids) >= self.chunk:
                full, self._ids = self._ids, []
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="apply-buffer", daemon=True)
                self._thread.start()
        if full:
            self._deliver(full)
        else:
            self._wake.set()

    def flush(self) -> None:
        """Send whatever is gathered now (at exit, and for tests)."""
        with self._lock:
            taken, self._ids = self._ids, []
        self._deliver(taken)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            time.sleep(self.linger_s)
            self.flush()

    def _deliver(self, event_ids: list[int]) -> None:
        for start in range(0, len(event_ids), self.chunk):
            part = event_ids[start : start + self.chunk]
            try:
                self._send(part)
            except Exception:  # the broker is down: the relay sends them once it is back
                logger.warning("apply of %d events not enqueued; the relay will send them", len(part), exc_info=True)
