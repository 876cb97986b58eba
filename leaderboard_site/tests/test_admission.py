"""The admission limit in front of Django: at most `limit` requests inside at once, each admitted
only with its whole body, the slot given back when the response starts."""

import asyncio
from typing import Any

from leaderboard_site.admission import DjangoAdmission


class Recorder:
    """An ASGI app that reads the body, holds for a moment, answers, then lingers (a streamed tail)."""

    def __init__(self) -> None:
        self.inside = 0
        self.most_inside = 0
        self.bodies: list[bytes] = []
        self.release_tail = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        await asyncio.sleep(0.01)
        self.inside -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await self.release_tail.wait()
        await send({"type": "http.response.body", "body": b"ok"})


def request(app: Any, chunks: list[bytes]) -> Any:
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0)
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def run() -> list[dict[str, Any]]:
        await app({"type": "http", "method": "POST", "path": "/"}, receive, send)
        return sent

    return run()


def test_at_most_the_limit_inside_and_every_body_replayed_whole():
    async def main() -> None:
        inner = Recorder()
        inner.release_tail.set()
        app = DjangoAdmission(inner, limit=2)
        answers = await asyncio.gather(*(request(app, [b"a%d" % i, b"-b"]) for i in range(10)))
        assert inner.most_inside == 2
        assert sorted(inner.bodies) == sorted(b"a%d-b" % i for i in range(10))
        assert all(a[0]["status"] == 200 and a[1]["body"] == b"ok" for a in answers)

    asyncio.run(main())


def test_a_response_still_streaming_holds_no_slot():
    async def main() -> None:
        inner = Recorder()  # the tail is held back: every response stays open after its start
        app = DjangoAdmission(inner, limit=1)
        pending = [asyncio.ensure_future(request(app, [b"x"])) for _ in range(3)]
        for _ in range(100):
            await asyncio.sleep(0.01)
            if len(inner.bodies) == 3:
                break
        assert len(inner.bodies) == 3  # all three were admitted while the others still stream
        inner.release_tail.set()
        await asyncio.gather(*pending)

    asyncio.run(main())
