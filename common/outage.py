"""One log line when a dependency stops answering and one when it is back, instead of one per
request: what an operator reads during an outage (a Redis, a broker that is down)."""

import logging
import threading
import time


class OutageLog:
    """Tracks one dependency seen from this process.

    `failed(exc)` logs a warning the first time (what is unreachable, what the process does
    instead, the error), then at most one reminder every `every_s` seconds with the failures
    since; `succeeded()` logs once that it is back, with how long it was gone. Thread-safe; cheap
    while nothing fails.
    """

    def __init__(self, logger: logging.Logger, what: str, meanwhile: str, every_s: float = 30.0) -> None:
        self.logger = logger
        self.what = what
        self.meanwhile = meanwhile
        self.every_s = every_s
        self._lock = threading.Lock()
        self._since: float | None = None  # monotonic time of the first failure of this outage
        self._logged = 0.0
        self._failures = 0

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            self._failures += 1
            if self._since is None:
                self._since = self._logged = now
                self._failures = 0
                self.logger.warning("%s unreachable; %s (%s: %s)", self.what, self.meanwhile, type(exc).__name__, exc)
            elif now - self._logged >= self.every_s:
                self.logger.warning(
                    "%s still unreachable after %.0f s (%d failures since the last report; %s)",
                    self.what,
                    now - self._since,
                    self._failures,
                    self.meanwhile,
                )
                self._logged = now
                self._failures = 0

    def succeeded(self) -> None:
        if self._since is None:
            return
        with self._lock:
            if self._since is None:
                return
            self.logger.warning("%s reachable again after %.1f s", self.what, time.monotonic() - self._since)
            self._since = None
            self._failures = 0
