"""Django's share of the HTTP traffic (what the fast entrances do not answer: the admin, signed
batches, the schema, the probes), in one hop to a thread per request.

Django's own ASGI handler runs a request of a synchronous view as a dozen hops between the event
loop and a thread started for that request: each hook of each MiddlewareMixin middleware
(security, sessions, common, CSRF, authentication, messages, clickjacking) is wrapped in
sync_to_async, so are the request_started and request_finished receivers and the response's
close, and the thread is started and joined per request. Measured on this machine (bench/
django_floor.py): 3.0 ms of CPU for `/health/live`, a view that does nothing.

Here the middleware chain is built synchronous, as under WSGI, and the whole request (the signals,
the middleware, the view, the response's close, which gives the database connection back to the
pool) runs in one call on a thread of a pool the process keeps (DJANGO_CONCURRENCY threads, as
many as admission.py lets in); the event loop only reads the body and sends the answer. A
streaming response (the standings export) sends its chunks from that thread as they come. Tests
run the call on the calling thread (DJANGO_IN_CALLER_THREAD), whose connection holds the test's
transaction, as the single-result path does (scoring/fastpath.py).
"""

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core import signals
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import HttpResponseBase
from django.urls import set_script_prefix

from common.asgi import Message, Receive, Scope, Send

Answer = tuple[int, list[tuple[bytes, bytes]], bytes | None]  # status, headers, body (None: streamed)


class OneHopHandler(ASGIHandler):
    """Django's ASGI handler with a synchronous middleware chain run in one call on a thread."""

    def __init__(self) -> None:
        super().__init__()
        self.load_middleware(is_async=False)
        self._respond: Callable[..., Any] | None = None

    def _responder(self) -> Callable[..., Any]:
        if self._respond is None:
            if settings.DJANGO_IN_CALLER_THREAD:
                self._respond = sync_to_async(self._answer, thread_sensitive=True)
            else:
                threads = ThreadPoolExecutor(max_workers=int(settings.DJANGO_CONCURRENCY), thread_name_prefix="django")
                self._respond = sync_to_async(self._answer, thread_sensitive=False, executor=threads)
        return self._respond

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # type: ignore[override]
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        try:
            body_file = await self.read_body(receive)
        except Exception:  # RequestAborted: the client left before its body arrived
            return
        loop = asyncio.get_running_loop()

        async def sending(message: Message) -> None:
            await send(message)

        def send_from_thread(message: Message) -> None:
            asyncio.run_coroutine_threadsafe(sending(message), loop).result()

        try:
            status, headers, body = await self._responder()(scope, body_file, send_from_thread)
        finally:
            body_file.close()
        if body is not None:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

    def _answer(self, scope: Scope, body_file: Any, send_from_thread: Callable[[Message], None]) -> Answer:
        """The request, on this thread from start to close: (status, headers, body), or for a
        streaming response (status, headers, None) once its chunks have been sent from here."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        response: Any = error_response if request is None else self.get_response(request)
        try:
            status, headers = response.status_code, self._headers(response)
            if not response.streaming:
                return status, headers, response.content
            send_from_thread({"type": "http.response.start", "status": status, "headers": headers})
            for chunk in response:
                send_from_thread({"type": "http.response.body", "body": chunk, "more_body": True})
            send_from_thread({"type": "http.response.body", "body": b""})
            return status, headers, None
        finally:
            response.close()  # request_finished: the database connection goes back to the pool

    @staticmethod
    def _headers(response: HttpResponseBase) -> list[tuple[bytes, bytes]]:
        """The response's headers and cookies as Django's ASGI handler sends them."""
        headers = [
            (header.encode("ascii") if isinstance(header, str) else bytes(header), value.encode("latin1"))
            for header, value in response.items()
        ]
        headers += [(b"Set-Cookie", c.output(header="").encode("ascii").strip()) for c in response.cookies.values()]
        return headers
