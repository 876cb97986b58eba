"""The webhook dispatcher: one asyncio process (`manage.py dispatch_events`, under the supervisor
beside web, worker and beat) that POSTs due deliveries and records how each try went.

Each round numbers the events that committed (services.events_number_all), then in one
transaction records the tries that ended since the last round and claims due deliveries
(delivery.dispatch_round: at most WEBHOOK_CONCURRENCY tries of a webhook in flight), and starts a
try for each. A round runs when a try ends, or every EVENTS_DISPATCH_POLL_S when nothing happens.
The database work runs on one thread of its own; the loop only waits on sockets, so a slow or dead
receiver holds its own places and nothing else.

A try is a POST of the event's body, signed as a signed request (docs/api.md, "Signing") with the
webhook's secret: `X-Leaderboard-Event` (the event's id), `X-Leaderboard-Timestamp`,
`X-Leaderboard-Signature`. A 2xx status within WEBHOOK_TIMEOUT_S delivers it. Redirects are never
followed (a 3xx is a failed try), no proxy from the environment is used, and at most the first
1 KB of an answer is read.
"""

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import httpx
from django import db
from django.conf import settings
from django.utils import timezone

from common.outage import OutageLog
from common.signing import HEADER_SIGNATURE, HEADER_TIMESTAMP, signature_compute

from .delivery import HEAD_BYTES, Job, Outcome, Recorded, deliveries_record, dispatch_round
from .metrics import recorded_count
from .schedule import Schedule, shipped
from .services import events_number_all

logger = logging.getLogger(__name__)
T = TypeVar("T")

HEADER_EVENT = "X-Leaderboard-Event"
NUMBER_EVERY_S = 0.1
USER_AGENT = "leaderboard-webhooks/1"


def signed_post_headers(*, job: Job, timestamp: int) -> dict[str, str]:
    """The headers of a try: the event's id and the signature over timestamp, POST, the URL's path
    and query, and the body, with the webhook's secret."""
    target = httpx.URL(job.url).raw_path.decode("ascii")
    ts = str(timestamp)
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Accept-Encoding": "identity",  # the 1 KB read of an answer is of its bytes, never inflated
        HEADER_EVENT: str(job.feed_id),
        HEADER_TIMESTAMP: ts,
        HEADER_SIGNATURE: signature_compute(secret=job.secret, timestamp=ts, method="POST", path=target, body=job.body),
    }


async def post(client: httpx.AsyncClient, job: Job, *, timeout_s: float) -> Outcome:
    """One try: the POST, its status if one comes within `timeout_s`, and up to HEAD_BYTES of the
    answer read within the same time (a status that came in time counts even if the body does not)."""
    started = time.monotonic()
    at = timezone.now()
    status: int | None = None
    head = b""
    error = ""
    try:
        async with asyncio.timeout(timeout_s):
            headers = signed_post_headers(job=job, timestamp=int(time.time()))
            async with client.stream("POST", job.url, content=job.body, headers=headers) as response:
                status = response.status_code
                async for chunk in response.aiter_raw():
                    head += chunk
                    if len(head) >= HEAD_BYTES:
                        break
    except TimeoutError:
        error = "" if status is not None else f"no answer within {timeout_s:g} s"
    except (httpx.HTTPError, OSError) as exc:
        if status is None:
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    latency_ms = int((time.monotonic() - started) * 1000)
    return Outcome(job=job, at=at, latency_ms=latency_ms, status=status, head=head[:HEAD_BYTES], error=error)


def http_client(*, timeout_s: float) -> httpx.AsyncClient:
    """The dispatcher's client: no redirects, no proxy or certificates path from the environment,
    connections kept between tries of a receiver. Its per-operation timeouts only back up `post`'s
    deadline for the whole try."""
    return httpx.AsyncClient(
        follow_redirects=False,
        trust_env=False,
        timeout=httpx.Timeout(timeout_s),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
    )


class Dispatcher:
    """The loop (see the module docstring). `run()` until `stop()`; tries still in flight then get
    up to WEBHOOK_TIMEOUT_S to end, and are recorded."""

    def __init__(self, *, schedule: Schedule | None = None) -> None:
        self.schedule = schedule or shipped()
        self.timeout_s = float(settings.WEBHOOK_TIMEOUT_S)
        self.limit = int(settings.WEBHOOK_CONCURRENCY)
        self.poll_s = float(settings.EVENTS_DISPATCH_POLL_S)
        self.busy: dict[int, int] = {}
        self.ended: list[Outcome] = []
        self.tries: set[asyncio.Task[None]] = set()
        self.db_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dispatch-db")
        self.database = OutageLog(logger, "PostgreSQL (webhook dispatcher)", "deliveries wait; tries are kept")
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._numbered_at = 0.0

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    async def run(self) -> None:
        async with http_client(timeout_s=self.timeout_s) as client:
            while not self._stopping.is_set():
                self._wake.clear()
                await self.round(client)
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=self.poll_s)
                except TimeoutError:
                    pass
            if self.tries:
                await asyncio.wait(self.tries, timeout=self.timeout_s + 1)
            await self._record()
        self.db_thread.shutdown(wait=True)

    async def round(self, client: httpx.AsyncClient) -> None:
        """Number what committed, record what ended, claim and start what is due."""
        outcomes, self.ended = self.ended, []
        busy = {w: n for w, n in self.busy.items() if n}
        # New events are numbered at most every NUMBER_EVERY_S (a round trip saved in busy rounds).
        number = time.monotonic() - self._numbered_at >= min(self.poll_s, NUMBER_EVERY_S)
        if number:
            self._numbered_at = time.monotonic()
        done = await self._db(
            lambda: _round(outcomes=outcomes, busy=busy, limit=self.limit, schedule=self.schedule, number=number)
        )
        if done is None:  # kept for the next round (a lease that runs out meanwhile only repeats a try)
            self.ended = outcomes + self.ended
            return
        recorded, jobs = done
        _report(recorded, outcomes)
        for job in jobs:
            self.busy[job.webhook_id] = self.busy.get(job.webhook_id, 0) + 1
            task = asyncio.create_task(self._try(client, job))
            self.tries.add(task)
            task.add_done_callback(self.tries.discard)

    async def _try(self, client: httpx.AsyncClient, job: Job) -> None:
        try:
            outcome = await post(client, job, timeout_s=self.timeout_s)
        except Exception as exc:  # never lose the place: the lease brings the delivery back
            logger.exception("webhook try failed unexpectedly (delivery %s)", job.delivery_id)
            outcome = Outcome(job=job, at=timezone.now(), latency_ms=0, error=f"{type(exc).__name__}")
        self.ended.append(outcome)
        self.busy[job.webhook_id] -= 1
        self._wake.set()

    async def _record(self) -> None:
        """Record the tries that ended (at the stop)."""
        if not self.ended:
            return
        outcomes, self.ended = self.ended, []
        schedule = self.schedule
        recorded = await self._db(lambda: deliveries_record(outcomes=outcomes, schedule=schedule, now=timezone.now()))
        if recorded is not None:
            _report(recorded, outcomes)

    async def _db(self, work: Callable[[], T]) -> T | None:
        """`work` on the database thread; None when the database fails it (logged once per outage)."""
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self.db_thread, _with_connection, work)
        except (db.DatabaseError, db.InterfaceError) as exc:
            self.database.failed(exc)
            await loop.run_in_executor(self.db_thread, db.connections.close_all)
            return None
        self.database.succeeded()
        return result


def _round(
    *, outcomes: list[Outcome], busy: dict[int, int], limit: int, schedule: Schedule, number: bool
) -> tuple[Recorded, list[Job]]:
    if number:
        events_number_all()
    return dispatch_round(outcomes=outcomes, busy=busy, limit=limit, schedule=schedule, now=timezone.now())


def _report(recorded: Recorded, outcomes: list[Outcome]) -> None:
    """Count what was recorded (metrics) and log each try that did not deliver."""
    recorded_count(recorded)
    for outcome in outcomes:
        if not outcome.delivered:
            logger.info(
                "webhook %s: event %s not delivered (%s)",
                outcome.job.webhook_id,
                outcome.job.feed_id,
                outcome.error or f"HTTP {outcome.status}",
            )


def _with_connection(work: Callable[[], T]) -> T:
    """`work`, then the connection back to the pool (or closed if it broke), as after a request."""
    try:
        return work()
    finally:
        db.close_old_connections()


def run_forever() -> None:
    """The process: the dispatcher until SIGTERM or SIGINT."""
    dispatcher = Dispatcher()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, dispatcher.stop)
        logger.info("webhook dispatcher started")
        await dispatcher.run()
        logger.info("webhook dispatcher stopped")

    asyncio.run(main())
