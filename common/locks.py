"""A Redis lock held for the length of a long job (a rebuild, the recovery of a flushed Redis).

The lock has a short lifetime (`ttl_s`) that a thread of its own renews every third of it, so a
job that dies frees it within seconds while a job that runs for minutes keeps it. A lock can be
lost while it is held: Redis flushed (FLUSHALL, or a restart without its data) or unreachable
for longer than its lifetime. The job asks `check()` before a step that must not run twice
at once (a rebuild's swap); `lost` says whether the renewal found it gone.

The caller spells the key (each app spells its own keys in one module).
"""

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.exceptions import LockError
from redis.lock import Lock

from .redis import client

logger = logging.getLogger(__name__)


class LockLost(Exception):
    """The lock is no longer ours: Redis lost it (flushed) or it expired while unrenewed."""


class HeldLock:
    """A lock that is held: its key and token, and whether the renewal found it gone."""

    def __init__(self, lock: Lock, name: str, ttl_s: float) -> None:
        self._lock = lock
        self.name = name
        self.ttl_s = ttl_s
        self.lost = threading.Event()
        self._done = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name=f"lock-renew:{name}", daemon=True)

    @property
    def token(self) -> str:
        """The value the lock's key holds while it is ours."""
        raw = self._lock.local.token
        return raw.decode() if isinstance(raw, bytes) else str(raw)

    def check(self) -> None:
        """Raise LockLost unless the key still holds our token (asks Redis)."""
        if self.lost.is_set() or not self._lock.owned():
            self.lost.set()
            raise LockLost(self.name)

    def _renew(self) -> None:
        while not self._done.wait(self.ttl_s / 3):
            try:
                self._lock.reacquire()
            except LockError:  # the key is gone or holds another token: not ours any more
                self.lost.set()
                return
            except redis.RedisError as error:
                # Redis unreachable for a moment: try again at the next turn; `check` says whether
                # it came back without our key.
                logger.info("lock %s not renewed (%r); trying again", self.name, error)

    def _start(self) -> None:
        self._renewer.start()

    def _stop(self) -> None:
        self._done.set()
        self._renewer.join()
        try:
            self._lock.release()
        except (LockError, redis.RedisError) as error:
            # Lost already, or Redis is down: the key expires by itself after its TTL.
            logger.info("lock %s not released (%r); it expires by itself", self.name, error)


@contextmanager
def lock_held(name: str, *, ttl_s: float = 30.0, wait_s: float = 0.0) -> Iterator[HeldLock | None]:
    """Hold the lock `name` for the block, renewed meanwhile; yields None when another holder
    kept it for `wait_s` seconds (0: do not wait). Released when the block ends."""
    lock = client().lock(name, timeout=ttl_s, blocking=wait_s > 0, blocking_timeout=wait_s, thread_local=False)
    if not lock.acquire():
        yield None
        return
    held = HeldLock(lock, name, ttl_s)
    held._start()
    try:
        yield held
    finally:
        held._stop()


def lock_taken(name: str) -> bool:
    """Whether someone holds the lock `name` (a glance: it may change the next moment)."""
    return bool(client().exists(name))
