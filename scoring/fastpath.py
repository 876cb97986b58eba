"""The fast path of single-result submissions: signed POSTs of one match, stored in groups.

A match server that sends its results one request at a time would otherwise cost the service a
whole Django request and a whole ledger transaction per result (about 15 statements; measured: 50
requests/s on 2 cores). Here the requests a web process receives within SINGLES_LINGER_MS are
answered together, as a group commit: one thread runs the group through the same functions the
Django view calls (`request_verify` with the group's keys looked up at once, one spend of each
key's request bucket, `single_match_parse`, then one `matches_submit` per game and key, in one
transaction), and each request gets its own answer, byte for byte the Django view's (a test
compares them). Each match is still judged on its own: a bad one does not sink the others, and
two requests with one match id in one group are answered as Django answers them one after the
other (the second is a replay, or a conflict).

Whatever is not a plain success goes to Django unchanged, with its body: a bad signature, a key
over its rate, malformed JSON, a match id that is not a UUID, a query string, an unknown host, a
group whose transaction failed (it stored nothing). Django answers those as it always does, so
the errors keep one implementation. One exception: a ledger that cannot be reached (PostgreSQL
down or restarting) is answered here, with the 503 `ledger_unavailable` Django would give, since
Django would only wait for a connection a second time (the pool's timeout) to say the same.
"""

import asyncio
import logging
import time
import uuid
import weakref
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

import orjson
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection
from django.utils import timezone

from anticheat.models import ServerKey
from anticheat.services import Rules, request_verify, rules_for, server_key_spend, server_keys_by_id
from common.api_errors import LEDGER_DOWN, RETRY_AFTER_S, ApiError, ledger_unreachable
from common.asgi import (
    ROUTE_NAME,
    ASGIApp,
    Receive,
    Scope,
    Send,
    body_read,
    plain_request,
    render,
    replaying,
    respond,
)
from common.operations import FAST_ANSWERS, Router
from common.outage import OutageLog
from common.request_ids import request_id, request_ids_bound
from common.signing import HEADER_KEY, HEADER_SIGNATURE, HEADER_TIMESTAMP

from .apis import OPERATIONS, REPLAY_HEADER
from .reporting import write_report
from .services import MatchOutcome, matches_submit
from .validation import Errors, MatchIn, single_match_parse

logger = logging.getLogger(__name__)

ROUTER = Router(OPERATIONS, serves=lambda op: op.id == "match_results_submit")  # its declaration: apis.py
_SIGNED = {name.lower().encode(): name for name in (HEADER_KEY, HEADER_TIMESTAMP, HEADER_SIGNATURE)}
REPLAYED = (REPLAY_HEADER.encode(), b"true")
ParsedMatch = tuple[uuid.UUID, MatchIn | None, Errors]
RETRY_AFTER = (b"Retry-After", str(RETRY_AFTER_S).encode())


def unavailable() -> MatchOutcome:
    """Django's answer when the ledger cannot be reached: nothing was stored."""
    return MatchOutcome(http_status=LEDGER_DOWN.status, body=LEDGER_DOWN.body())


@dataclass(frozen=True)
class Single:
    """One single-result POST, as received."""

    game: str
    match_id: str
    path: str
    headers: dict[str, str]
    body: bytes
    request_id: str = ""  # common/request_ids.py: its events' apply task carries it


def singles_answer(requests: list[Single]) -> list[MatchOutcome | None]:
    """Answer a group of single-result POSTs (see the module docstring); None: Django answers it.

    Three steps: the signatures (`_verified`), each key's request bucket and the bodies
    (`_parsed`), then one `matches_submit` per key (`_submitted`). Runs in a worker thread; the
    connection goes back to the pool at the end. When the ledger cannot be reached, the requests it
    concerns get the 503 (`unavailable`) and nothing is stored.
    """
    global _ledger_down_until
    answers: list[MatchOutcome | None] = [None] * len(requests)
    if time.monotonic() < _ledger_down_until:
        return _unavailable_to(requests, answers)
    try:
        now = timezone.now()
        keys = server_keys_by_id(r.headers[HEADER_KEY] for r in requests if r.headers.get(HEADER_KEY))
        verified = _verified(requests, keys, now)
        rules = {key_id: rules_for(game=keys[key_id].game) for key_id in verified}
        groups = _parsed(requests, verified, keys, rules, now)
        _submitted(requests, groups, keys, rules, answers)
    except Exception as exc:
        if not settings.SINGLES_IN_CALLER_THREAD:
            connection.close()  # perhaps broken: the next group takes a fresh one from the pool
        if not ledger_unreachable(exc):
            raise
        _ledger_outage.failed(exc)
        _ledger_down_until = time.monotonic() + LEDGER_RETRY_S
        return _unavailable_to(requests, answers)
    _ledger_outage.succeeded()
    return answers


def _verified(requests: list[Single], keys: dict[str, ServerKey], now: datetime) -> dict[str, list[int]]:
    """Key id -> the requests it signed, in arrival order; a refused signature is Django's 401/403."""
    verified: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(requests):
        try:
            key = request_verify(
                game_slug=r.game,
                method="POST",
                path=r.path,
                body=r.body,
                headers=r.headers,
                now=now,
                key_lookup=keys.get,
            )
        except ApiError:
            continue
        verified[key.key_id].append(i)
    return verified


def _parsed(
    requests: list[Single],
    verified: dict[str, list[int]],
    keys: dict[str, ServerKey],
    rules: dict[str, Rules],
    now: datetime,
) -> dict[str, list[tuple[int, ParsedMatch]]]:
    """Key id -> its requests within its request bucket, with their matches parsed. The rest are
    Django's: over the key's rate (429), malformed JSON or past orjson, a match id that is no UUID (400)."""
    groups: dict[str, list[tuple[int, ParsedMatch]]] = defaultdict(list)
    for key_id, indexes in verified.items():
        key = keys[key_id]
        granted = server_key_spend(key=key, rules=rules[key_id], wanted=len(indexes), now=now)
        for i in indexes[:granted]:
            try:
                data = orjson.loads(requests[i].body)
                match = single_match_parse(data, raw_match_id=requests[i].match_id, game=key.game, now=timezone.now())
            except (orjson.JSONDecodeError, ApiError):
                continue
            groups[key_id].append((i, match))
    return groups


def _submitted(
    requests: list[Single],
    groups: dict[str, list[tuple[int, ParsedMatch]]],
    keys: dict[str, ServerKey],
    rules: dict[str, Rules],
    answers: list[MatchOutcome | None],
) -> None:
    """Each key's matches stored in one transaction; their outcomes into `answers`. A group whose
    transaction failed stored nothing: its requests go to Django one by one (but for a ledger that
    cannot be reached, raised to the caller)."""
    for key_id, items in groups.items():
        key = keys[key_id]
        try:
            # The group's requests' ids go with the apply task of their events (apply_buffer.py).
            with request_ids_bound(requests[i].request_id for i, _ in items if requests[i].request_id):
                outcomes = matches_submit(
                    game=key.game, key=key, matches=[m for _, m in items], now=timezone.now(), rules=rules[key_id]
                )
        except Exception as exc:
            if ledger_unreachable(exc):
                raise
            logger.warning("a group of %d single results went to Django", len(items), exc_info=True)
            continue
        for (i, _), outcome in zip(items, outcomes, strict=True):
            answers[i] = outcome


# After a group found the ledger unreachable, the groups of the next LEDGER_RETRY_S get the 503 at
# once: groups run one after the other, and each would otherwise wait for the pool (its timeout)
# behind the last, so the 503 would take a multiple of that timeout. Then a group tries again.
LEDGER_RETRY_S = 0.5
_ledger_down_until = 0.0
_ledger_outage = OutageLog(logger, "PostgreSQL (the ledger)", "single results are answered 503")


def _unavailable_to(requests: list[Single], answers: list[MatchOutcome | None]) -> list[MatchOutcome | None]:
    """The answers of a group when the ledger cannot be reached: what was answered is stored (its
    transaction committed), the rest stored nothing and get the 503, but for those Django refuses
    without a database."""
    return [
        answer or (unavailable() if _needs_ledger(r) else None) for answer, r in zip(answers, requests, strict=True)
    ]


class _KeyWanted(Exception):
    pass


def _needs_ledger(request: Single) -> bool:
    """Whether Django's answer to the request needs the ledger: False when its signature headers
    are refused before the key is looked up (Django's 401 needs no database)."""

    def lookup(_: str) -> None:
        raise _KeyWanted

    try:
        request_verify(
            game_slug=request.game,
            method="POST",
            path=request.path,
            body=request.body,
            headers=request.headers,
            now=timezone.now(),
            key_lookup=lookup,
        )
    except ApiError:
        return False
    except _KeyWanted:
        return True
    return True


class _Gatherer:
    """The requests of one event loop waiting for their group.

    At most SINGLES_GROUPS_AT_ONCE groups run at a time. A group starts SINGLES_LINGER_MS after
    the first request that finds a runner free, and takes every request waiting by then (up to
    SINGLES_GROUP_MAX); a runner that finishes takes the requests that waited meanwhile at once.
    So groups grow with the load instead of queueing behind each other.
    """

    def __init__(self, answer: Callable[[list[Single]], list[MatchOutcome | None]]) -> None:
        # The groups run in this loop's own thread, which keeps its database connection from one
        # group to the next (no checkout, no session set-up per group). Tests: the caller's thread,
        # whose connection holds the test's transaction.
        if settings.SINGLES_IN_CALLER_THREAD:
            self.answer = sync_to_async(answer, thread_sensitive=True)
        else:
            self.executor = ThreadPoolExecutor(
                max_workers=int(settings.SINGLES_GROUPS_AT_ONCE), thread_name_prefix="singles"
            )
            self.answer = sync_to_async(answer, thread_sensitive=False, executor=self.executor)
        self.waiting: list[tuple[Single, asyncio.Future[MatchOutcome | None]]] = []
        self.timer: asyncio.TimerHandle | None = None
        self.running = 0
        self.tasks: set[asyncio.Task[None]] = set()  # held until done (the loop keeps weak references)

    async def submit(self, request: Single) -> MatchOutcome | None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[MatchOutcome | None] = loop.create_future()
        self.waiting.append((request, future))
        if self.running < int(settings.SINGLES_GROUPS_AT_ONCE):
            if len(self.waiting) >= int(settings.SINGLES_GROUP_MAX):
                self.start()
            elif self.timer is None:
                self.timer = loop.call_later(settings.SINGLES_LINGER_MS / 1000, self.start)
        return await future

    def start(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if not self.waiting or self.running >= int(settings.SINGLES_GROUPS_AT_ONCE):
            return
        size = int(settings.SINGLES_GROUP_MAX)
        group, self.waiting = self.waiting[:size], self.waiting[size:]
        self.running += 1
        task = asyncio.get_running_loop().create_task(self.run(group))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def run(self, group: list[tuple[Single, asyncio.Future[MatchOutcome | None]]]) -> None:
        # The group's log lines name its requests (this task's context is a copy of the first's).
        with request_ids_bound(request.request_id for request, _ in group if request.request_id):
            try:
                answers = await self.answer([request for request, _ in group])
            except Exception:
                logger.warning("a group of %d single results failed; Django answers them", len(group), exc_info=True)
                answers = [None] * len(group)
            finally:
                self.running -= 1
        for (_, future), answer in zip(group, answers, strict=True):
            if not future.done():
                future.set_result(answer)
        if self.waiting:
            self.start()  # they have waited their linger already


class FastSingles:
    """ASGI: single-result POSTs here, in groups; everything else (and what this path does not
    answer itself) to `fallback`."""

    def __init__(self, fallback: ASGIApp) -> None:
        self.fallback = fallback
        self._gatherers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gatherer] = weakref.WeakKeyDictionary()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = None
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("query_string"):
            found = ROUTER.match("POST", scope["path"])
        if found is None or not plain_request(scope):
            await self.fallback(scope, receive, send)
            return
        op, path_args = found
        scope[ROUTE_NAME] = op.route
        body, messages = await body_read(receive)
        headers: dict[str, str] = {}
        for name, value in scope.get("headers", ()):
            wanted = _SIGNED.get(name.lower())
            if wanted is not None:  # repeated headers joined as Django joins them
                text = value.decode("latin-1")
                headers[wanted] = f"{headers[wanted]},{text}" if wanted in headers else text
        raw_path = scope.get("raw_path") or scope["path"].encode()
        request = Single(
            path_args["game"],
            path_args["match_id"],
            raw_path.decode("utf-8", "replace"),
            headers,
            body,
            request_id() or "",
        )
        gatherer = self._gatherers.get(asyncio.get_running_loop())
        if gatherer is None:
            gatherer = self._gatherers[asyncio.get_running_loop()] = _Gatherer(singles_answer)
        outcome = await gatherer.submit(request)
        if outcome is None:
            await self.fallback(scope, replaying(messages, receive), send)
            return
        if outcome.http_status != 503:  # a 503 stored nothing and judged nothing
            write_report(game=path_args["game"], answers=[(outcome.http_status, outcome.body)])
        extra = [REPLAYED] if outcome.replayed else [RETRY_AFTER] if outcome.http_status == 503 else []
        await respond(send, scope, outcome.http_status, render(outcome.body), allow=ROUTER.allow(op), extra=extra)
        FAST_ANSWERS[op.id] += 1
