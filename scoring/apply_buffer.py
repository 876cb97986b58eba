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
its interval later). A copy sent by both is applied once (the dedup markers, the outbox). The
log says once that the broker is gone and once that it is back.

Each task carries the request ids of the requests whose events it holds (bound around its send:
common/request_ids.py puts them in the message's headers), so the worker's log line for the task
names them. Events the relay sends again carry none.
"""

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable

from common.outage import OutageLog
from common.request_ids import request_ids, request_ids_bound

logger = logging.getLogger(__name__)

Send = Callable[[list[int]], None]
Part = tuple[list[int], tuple[str, ...]]  # event ids, and the ids of the requests that accepted them


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
        self._parts: list[Part] = []
        self._count = 0
        self._held: list[Part] = []  # not sent: the broker was down
        self._held_count = 0
        self._thread: threading.Thread | None = None

    def add(self, event_ids: list[int]) -> None:
        """Gather these events (with the request ids bound in this context) for the next task."""
        if not event_ids:
            return
        if self._pid != os.getpid():  # a forked child: the parent's thread and lock are not ours
            self._reset()
        full: list[Part] = []
        with self._lock:
            self._parts.append((list(event_ids), request_ids()))
            self._count += len(event_ids)
            if self._count >= self.chunk:
                full, self._parts, self._count = self._parts, [], 0
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
            taken = self._held + self._parts
            self._parts, self._count, self._held, self._held_count = [], 0, [], 0
        self._deliver(taken)

    @property
    def held(self) -> int:
        return self._held_count

    def _run(self) -> None:
        while True:
            if self._wake.wait(timeout=RETRY_S if self._held else None):
                self._wake.clear()
                time.sleep(self.linger_s)
            self.flush()

    def _deliver(self, parts: list[Part]) -> None:
        tasks = _chunks(parts, self.chunk)
        for n, (event_ids, rids) in enumerate(tasks):
            try:
                with request_ids_bound(rids):
                    self._send(event_ids)
            except Exception as exc:  # the broker is down: held with the rest, sent again in a second
                self._outage.failed(exc)
                self._hold(tasks[n:])
                return
            self._outage.succeeded()

    def _hold(self, parts: list[Part]) -> None:
        with self._lock:
            self._held.extend(parts)
            self._held_count += sum(len(ids) for ids, _ in parts)
            while self._held_count > self.held_max:  # the oldest go: the relay finds them in the ledger
                ids, rids = self._held[0]
                extra = self._held_count - self.held_max
                if len(ids) <= extra:
                    del self._held[0]
                    self._held_count -= len(ids)
                else:
                    self._held[0] = (ids[extra:], rids)
                    self._held_count -= extra
            if self._pid == os.getpid():
                self._start()


def _chunks(parts: list[Part], size: int) -> list[Part]:
    """The parts as tasks of at most `size` events, in order; each with the request ids of the
    parts its events come from."""
    tasks: list[Part] = []
    ids: list[int] = []
    rids: dict[str, None] = {}
    for part_ids, part_rids in parts:
        start = 0
        while start < len(part_ids):
            taken = part_ids[start : start + size - len(ids)]
            ids.extend(taken)
            start += len(taken)
            rids.update(dict.fromkeys(part_rids))
            if len(ids) == size:
                tasks.append((ids, tuple(rids)))
                ids, rids = [], {}
    if ids:
        tasks.append((ids, tuple(rids)))
    return tasks
