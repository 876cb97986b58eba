"""Pieces of the ASGI fast paths (boards/fastpath.py for hot reads, scoring/fastpath.py for
single results): answers rendered and headed exactly as Django and DRF would, and the request
bodies a fast path read handed on to Django untouched when it does not answer itself."""

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

import orjson
from django.conf import settings
from django.http.request import split_domain_port, validate_host

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]  # Django's handler, Channels' routers

# The scope's key for the name of the route that answers (the URL pattern's name, as Django's URL
# resolution gives it): the fast paths and Django set it, the request metrics read it
# (common/observability.py).
ROUTE_NAME = "route_name"


class Fallback(Exception):
    """Django answers this one."""


def render(data: Any) -> bytes:
    """JSON as DRF's JSONRenderer writes it: compact, UTF-8, U+2028/U+2029 escaped."""
    body = orjson.dumps(data)
    if b"\xe2\x80" in body:
        body = body.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")
    return body


async def respond(
    send: Send,
    scope: Scope,
    status: int,
    body: bytes,
    *,
    allow: bytes,
    extra: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """A JSON answer with the headers a DRF view's answer gets (Allow, then Django's middleware)."""
    headers = [(b"Content-Type", b"application/json"), *extra, (b"Allow", allow), *FRAME_HEADER]
    headers += [(b"Content-Length", str(len(body)).encode()), *security_headers(secure=scope.get("scheme") == "https")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# The headers Django's middleware adds to these answers (XFrameOptionsMiddleware, then
# SecurityMiddleware), from the same settings; the fast paths' tests compare them with Django's.
FRAME_HEADER = [(b"X-Frame-Options", str(getattr(settings, "X_FRAME_OPTIONS", "DENY")).upper().encode())]


def security_headers(*, secure: bool) -> list[tuple[bytes, bytes]]:
    headers = []
    if secure and settings.SECURE_HSTS_SECONDS:
        value = f"max-age={settings.SECURE_HSTS_SECONDS}"
        if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS:
            value += "; includeSubDomains"
        if settings.SECURE_HSTS_PRELOAD:
            value += "; preload"
        headers.append((b"Strict-Transport-Security", value.encode()))
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append((b"X-Content-Type-Options", b"nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        policy = settings.SECURE_REFERRER_POLICY
        value = policy if isinstance(policy, str) else ",".join(policy)
        headers.append((b"Referrer-Policy", value.encode()))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append((b"Cross-Origin-Opener-Policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY.encode()))
    return headers


def plain_request(scope: Scope) -> bool:
    """A request Django's middleware would pass through unchanged: an allowed host, and no HTTPS
    redirect due. Anything else goes to Django, which answers it as it always does."""
    if settings.SECURE_SSL_REDIRECT and scope.get("scheme") != "https":
        return False
    host = next((value.decode("latin-1") for name, value in scope.get("headers", ()) if name == b"host"), "")
    return validate_host(split_domain_port(host)[0], settings.ALLOWED_HOSTS)


async def body_read(receive: Receive) -> tuple[bytes, list[Message]]:
    """The whole request body, and the messages it came in (to hand on with `replaying`)."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    return b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request"), messages


def replaying(messages: list[Message], receive: Receive) -> Receive:
    """A `receive` that gives these messages again, then whatever the client sends next."""
    pending = iter(messages)

    async def receive_replayed() -> Message:
        message = next(pending, None)
        return message if message is not None else await receive()

    return receive_replayed
