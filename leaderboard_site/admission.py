"""Admission for Django's share of the HTTP traffic: at most DJANGO_CONCURRENCY requests of a web
process inside Django at once; the others wait their turn on the event loop.

Django runs each ASGI request's synchronous code (every DRF view, the admin) in a thread of its
own. Left alone, 32 concurrent signed POSTs become 32 threads of one process taking turns on the
GIL every few milliseconds, each holding an open transaction and a pooled connection while it
waits: measured on 2 cores, 44 single-result POSTs/s at p50 676 ms, and 503s once the pool's
connections ran out. Waiting on the loop instead costs nothing, and each admitted request runs
almost uncontended.

A request takes its slot once its whole body has arrived (a slow sender holds none) and gives it
back when its response starts (a slow reader holds none either). The fast board reads
(boards/fastpath.py) never enter Django and are not counted; WebSockets are not either.
"""

import asyncio
from typing import Any

from django.conf import settings

from common.asgi import Message, body_read, replaying


class DjangoAdmission:
    """ASGI middleware: a per-process semaphore around the wrapped (Django) application."""

    def __init__(self, app: Any, limit: int | None = None) -> None:
        self.app = app
        self.limit = limit or int(settings.DJANGO_CONCURRENCY)
        self._slots: asyncio.Semaphore | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._slots is None:  # made inside the server's event loop
            self._slots = asyncio.Semaphore(self.limit)
        _, messages = await body_read(receive)
        slots = self._slots
        held = True

        async def send_releasing(message: Message) -> None:
            nonlocal held
            if held and message["type"] == "http.response.start":
                held = False
                slots.release()
            await send(message)

        await slots.acquire()
        try:
            await self.app(scope, replaying(messages, receive), send_releasing)
        finally:
            if held:
                slots.release()
