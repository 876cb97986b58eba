"""Metrics kept by each process (prometheus-client in multiprocess mode), and the outer ASGI wrapper
that times every HTTP request and gives it its request id.

Every process (web, the worker's pool children, beat, commands) writes its metrics to files of its
own in PROMETHEUS_MULTIPROC_DIR (settings; `var/metrics` by default, one folder per host, emptied
when the supervisor starts the service); `/metrics` in any web process reads them all, so a value
counted in a pool child shows on the web's page. Import the metric types from here, never from
prometheus_client directly: this module points the library at the folder before it is loaded (the
library picks its storage once, at import). A counter of a process that has ended stays in the sum;
the `livesum` gauges of a dead process are dropped at the next scrape (`metrics_exposition`).

`Observed` is the outermost HTTP application (leaderboard_site/asgi.py): in front of the fast paths
and Django alike it takes or makes the request id (common/request_ids.py), returns it as
`X-Request-ID`, and observes the request's duration under its route's name: `scope["route_name"]`,
set by the fast path that answered or by `route_name_middleware` from Django's URL resolution
(the URL pattern's name, never the path: no player id in a label), else "unmatched".
"""

import bisect
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

from .asgi import ROUTE_NAME, ASGIApp, Message, Receive, Scope, Send
from .request_ids import HEADER, HEADER_NAME, bind, request_id_accept, unbind


def _multiprocess_dir() -> Path:
    path = Path(str(settings.PROMETHEUS_MULTIPROC_DIR))
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


MULTIPROC_DIR = _multiprocess_dir()

import prometheus_client.values  # noqa: E402
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest  # noqa: E402
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily  # noqa: E402
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead  # noqa: E402
from prometheus_client.registry import Collector  # noqa: E402

if not getattr(prometheus_client.values.ValueClass, "_multiprocess", False):
    raise RuntimeError(
        "prometheus_client was imported before PROMETHEUS_MULTIPROC_DIR was set: its metrics would stay in "
        "one process. Import the metric types from common.observability."
    )
# Live gauges left by a dead process that had this process's pid would be read back as ours.
mark_process_dead(os.getpid(), str(MULTIPROC_DIR))  # type: ignore[no-untyped-call]

__all__ = [
    "MULTIPROC_DIR",
    "Collector",
    "Counter",
    "CounterMetricFamily",
    "Gauge",
    "GaugeMetricFamily",
    "Histogram",
    "Observed",
    "metrics_exposition",
    "observe_many",
    "route_name_middleware",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
UNMATCHED = "unmatched"
# Reads take about a millisecond, writes tens, a rebuild's admin page seconds.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

HTTP_SECONDS = Histogram(
    "leaderboard_http_request_duration_seconds",
    "HTTP requests by route (the URL pattern's name), method and status code: time to the end of the answer.",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
_series: dict[tuple[str, str, int], Any] = {}  # labels() costs microseconds: each series looked up once


def _observe(route: str, method: str, status: int, seconds: float) -> None:
    if method not in _METHODS:  # any word is a method to a client: keep the label's values few
        method = "other"
    key = (route, method, status)
    series = _series.get(key)
    if series is None:
        series = _series[key] = HTTP_SECONDS.labels(route, method, str(status))
    series.observe(seconds)


class Observed:
    """ASGI: the request id and the latency histogram around `app` (HTTP only; see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        incoming = None
        for name, value in scope.get("headers", ()):
            if name == HEADER_NAME:
                incoming = value
                break
        rid = request_id_accept(incoming)
        rid_header = (HEADER.encode(), rid.encode())
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), rid_header]}
            await send(message)

        token = bind(rid)
        try:
            await self.app(scope, receive, send_with_id)
        except BaseException:
            status = status or 500
            raise
        finally:
            unbind(token)
            # 499: the client left before an answer (nginx's code for it).
            _observe(scope.get(ROUTE_NAME) or UNMATCHED, scope["method"], status or 499, time.perf_counter() - started)


def route_name(request: HttpRequest) -> str:
    """The route's label: the URL pattern's name (`board-top`), `admin` for every admin page,
    `static` for static files, `unmatched` when no pattern matched."""
    match = request.resolver_match
    if match is None:
        return "static" if request.path.startswith("/" + settings.STATIC_URL.lstrip("/")) else UNMATCHED
    if "admin" in match.namespaces:
        return "admin"
    return match.view_name


@sync_and_async_middleware
def route_name_middleware(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    """Django's answers name their route for `Observed` (first in MIDDLEWARE: it sees every answer)."""

    def note(request: HttpRequest) -> None:
        scope = getattr(request, "scope", None)  # an ASGI request (not the test client's WSGI one)
        if scope is not None:
            scope[ROUTE_NAME] = route_name(request)

    if iscoroutinefunction(get_response):

        async def middleware(request: HttpRequest) -> HttpResponseBase:
            response: HttpResponseBase = await get_response(request)
            note(request)
            return response

        return middleware

    def sync_middleware(request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase = get_response(request)
        note(request)
        return response

    return sync_middleware


def observe_many(histogram: Histogram, values: list[float]) -> None:
    """`histogram.observe(v)` for each of `values`, with one write per bucket instead of two per
    value (a worker observes thousands at once: 3 ms per 2,000 values, one at a time). Uses the
    histogram's per-bucket values, as its own `observe` does (prometheus_client pinned; a test
    compares the two)."""
    bounds: list[float] | None = getattr(histogram, "_upper_bounds", None)
    buckets: list[Any] | None = getattr(histogram, "_buckets", None)
    if bounds is None or buckets is None or len(bounds) != len(buckets) or not values:
        for v in values:
            histogram.observe(v)
        return
    counts = [0] * len(bounds)
    for v in values:
        counts[bisect.bisect_left(bounds, v)] += 1  # the first bound >= v, as observe's `v <= bound`
    histogram._sum.inc(sum(values))
    for bucket, n in zip(buckets, counts, strict=True):
        if n:
            bucket.inc(n)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped) serves nothing any more
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def dead_processes_forget(path: Path = MULTIPROC_DIR) -> list[int]:
    """Drop the live gauges (WebSocket connections) of processes that have ended, however they
    ended (a SIGKILLed web process never says goodbye); their counters and histograms stay."""
    dead: set[int] = set()
    for entry in os.scandir(path):
        name = entry.name
        if name.startswith("gauge_live") and name.endswith(".db"):
            tail = name[:-3].rsplit("_", 1)[-1]
            if tail.isdigit() and not _alive(int(tail)):
                dead.add(int(tail))
    for pid in sorted(dead):
        mark_process_dead(pid, str(path))  # type: ignore[no-untyped-call]  # the library's own signature
    return sorted(dead)


def metrics_exposition(collectors: Iterable[Collector] = ()) -> bytes:
    """The Prometheus text format: every process's metrics from the folder, then `collectors`
    (values read at scrape time from shared stores: Redis, PostgreSQL, the broker)."""
    dead_processes_forget()
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(MULTIPROC_DIR))  # type: ignore[no-untyped-call]
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry)
