"""Request ids: one per HTTP request, carried into every log line written for it and, with the
tasks it publishes, into the worker's.

The outer ASGI wrapper (common/observability.py) takes a valid incoming `X-Request-ID` or makes
one, binds it here for the request, and sends it back as `X-Request-ID`. A task published while ids
are bound carries them in its message headers (`task_headers_add`, Celery's before_task_publish);
the worker binds them while the task runs (`task_ids_bind`, task_prerun). A task that gathers the
events of several requests (the apply buffer, scoring/apply_buffer.py) binds all of their ids
around its publish, at most MAX_PER_TASK of them.

Nothing here imports Django or Celery: the logging filter is loaded by `LOGGING` before the apps.
"""

import logging
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

HEADER = "X-Request-ID"
HEADER_NAME = b"x-request-id"  # as ASGI scopes spell it
TASK_HEADER = "request_ids"  # the task message header (a list of ids)
MAX_LENGTH = 64
MAX_PER_TASK = 100  # ids a task carries at most; its log line says how many requests it served
_VALID = re.compile(rb"[A-Za-z0-9._:-]{1,%d}" % MAX_LENGTH)

_ids: ContextVar[tuple[str, ...]] = ContextVar("request_ids", default=())


def request_id_accept(raw: bytes | None) -> str:
    """The incoming header's value when it is a sane id (letters, digits, `.`, `_`, `:`, `-`, at
    most MAX_LENGTH), else a new id: 32 hex digits, 128 random bits (a uuid4's hex, without the
    UUID object: a fifth of the cost, on every request)."""
    if raw is not None and _VALID.fullmatch(raw):
        return raw.decode("ascii")
    return os.urandom(16).hex()


def request_ids() -> tuple[str, ...]:
    """The ids bound in this context: one in a request, the requests' of a group or task, or none."""
    return _ids.get()


def request_id() -> str | None:
    """The request id of this context when there is exactly one."""
    ids = _ids.get()
    return ids[0] if len(ids) == 1 else None


@contextmanager
def request_ids_bound(ids: Iterable[str]) -> Iterator[tuple[str, ...]]:
    """Bind these ids (deduplicated, in order, at most MAX_PER_TASK) for the block."""
    bound = tuple(dict.fromkeys(ids))[:MAX_PER_TASK]
    token = _ids.set(bound)
    try:
        yield bound
    finally:
        _ids.reset(token)


def bind(request_id: str) -> Any:
    """Bind one request's id; returns the token for `unbind` (the ASGI wrapper's hot path)."""
    return _ids.set((request_id,))


def unbind(token: Any) -> None:
    _ids.reset(token)


class RequestIdFilter(logging.Filter):
    """Puts `request_id` (one) or `request_ids` (several) on every record written while ids are
    bound (settings LOGGING: on the console handler)."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = _ids.get()
        if len(ids) == 1:
            record.request_id = ids[0]
        elif ids:
            record.request_ids = list(ids)
        return True


# Celery signal receivers (connected by leaderboard_site/celery.py).


def task_headers_add(headers: dict[str, Any] | None = None, **_: Any) -> None:
    """before_task_publish: the bound ids go with the task, as a message header. A header, not an
    argument: a worker of an older release ignores it, so messages of either release work in both."""
    ids = _ids.get()
    if ids and headers is not None:
        headers[TASK_HEADER] = list(ids)


def task_request_ids(task: Any) -> list[str]:
    """The ids a running task's message carried (none for a task published outside a request)."""
    raw = getattr(getattr(task, "request", None), TASK_HEADER, None)
    if not isinstance(raw, list):
        return []
    return [value for value in raw if isinstance(value, str) and _VALID.fullmatch(value.encode())][:MAX_PER_TASK]


def task_ids_bind(task: Any = None, **_: Any) -> None:
    """task_prerun: the task's ids are bound while it runs (its log lines carry them)."""
    _ids.set(tuple(task_request_ids(task)))


def task_ids_unbind(**_: Any) -> None:
    """task_postrun."""
    _ids.set(())
