"""Accepted events on their way to the apply queue, gathered for a moment per web process.

A task per request would cost the worker a task per request: a single-result POST makes a task of
one event, and the worker's fixed cost per task (a message, two ledger statements, a Redis round
trip) is paid for every one. `apply_soon` instead gathers the events every request of the process
commits within SCORING_ENQUEUE_LINGER_MS, and a flusher thread sends them as tasks of up to
ENQUEUE_CHUNK events; a full chunk goes at once, from the request's own thread.

Nothing here has to be durable: the events are in the ledger, unapplied, before they get here. If
the process dies with events still gathered, the relay (scoring.relay_unapplied, on beat) sends
them after SCORING_RELAY_AFTER_S, as it does for a lost task.

While the broker (Redis) is down a send fails at once (the broker's transport options,
settings/celery.py) and never fails the request that accepted the events: the events are held
(up to HELD_MAX ids, the oldest let go first) and sent again every second, so they go within a
second of the broker's return rather than when the relay finds them (SCORING_RELAY_AFTER_S and
its interval later). A copy sent by both is applied once (the dedup markers, `applied_at`). The
log says once that the broker is gone and once that it is back.
"""

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable

from common.outage import OutageLog

logger = logging.getLogger(__name__)

Send = Callable[[list[int]], None]


HELD_MAX = 200_000  # event ids kept for another send while the broker is down (~8 MB at most)
RETRY_S = 1.0


class ApplyBuffer:
    def __init__(self, *, linger_s: float, chunk: int, send: Send, held_max: int = HELD_MAX) -> None:
        self.linger_s = linger_s
        self.chunk = chunk
        self.held_max = held_max
        self._send = send
        self._outage = OutageLog(
            logger, "the apply queue (broker)", "accepted events are held and sent again every second"
        )
        self._reset()
        atexit.register(self.flush)

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._ids: list[int] = []
        self._held: list[int] = []  # not sent: the broker was down
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
            self._start()
        if full:
            self._deliver(full)
        else:
            self._wake.set()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="apply-buffer", daemon=True)
            self._thread.start()

    def flush(self) -> None:
        """Send whatever is gathered (and held) now (at exit, and for tests)."""
        with self._lock:
            taken, self._ids, self._held = self._held + self._ids, [], []
        self._deliver(taken)

    @property
    def held(self) -> int:
        return len(self._held)

    def _run(self) -> None:
        while True:
            if self._wake.wait(timeout=RETRY_S if self._held else None):
                self._wake.clear()
                time.sleep(self.linger_s)
            self.flush()

    def _deliver(self, event_ids: list[int]) -> None:
        for start in range(0, len(event_ids), self.chunk):
            part = event_ids[start : start + self.chunk]
            try:
                self._send(part)
            except Exception as exc:  # the broker is down: held with the rest, sent again in a second
                self._outage.failed(exc)
                self._hold(event_ids[start:])
                return
            self._outage.succeeded()

    def _hold(self, event_ids: list[int]) -> None:
        with self._lock:
            self._held.extend(event_ids)
            if len(self._held) > self.held_max:  # the oldest go: the relay finds them in the ledger
                del self._held[: len(self._held) - self.held_max]
            if self._pid == os.getpid():
                self._start()
