"""Pieces of the ASGI fast paths (boards/fastpath.py for hot reads, scoring/fastpath.py for
single results): answers rendered and headed exactly as Django and DRF would, and the request
bodies a fast path read handed on to Django untouched when it does not answer itself."""

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

import orjson
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port, validate_host
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware

from .api_errors import ApiError, error_answer

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
    allow: bytes | None,
    extra: Sequence[tuple[bytes, bytes]] = (),
    content_type: bytes = b"application/json",
) -> None:
    """An answer with the headers Django's gets: its view's own (`extra`, then a DRF view's Allow),
    then those Django's middleware adds, in Django's order (`django_headers`)."""
    before, after = django_headers(secure=scope.get("scheme") == "https")
    headers = [(b"Content-Type", content_type), *extra]
    if allow is not None:
        headers.append((b"Allow", allow))
    headers += before
    headers += [(b"Content-Length", str(len(body)).encode()), *after]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def respond_error(send: Send, scope: Scope, error: ApiError, *, allow: bytes) -> None:
    """An ApiError answered as Django's exception handler answers it (common/api_errors.py)."""
    status, body, headers = error_answer(error)
    extra = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
    await respond(send, scope, status, render(body), allow=allow, extra=extra)


_django_headers: dict[bool, tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]] = {}


def django_headers(*, secure: bool) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
    """The headers Django's middleware adds to an API answer, before and after Content-Length:
    XFrameOptionsMiddleware's, then (CommonMiddleware's Content-Length, then) SecurityMiddleware's,
    as Django's own middleware computes them from the settings: run once per scheme on an empty
    answer, and again after a test changes the settings."""
    found = _django_headers.get(secure)
    if found is None:
        request = HttpRequest()
        request.META = {"SERVER_NAME": "fast", "SERVER_PORT": "443" if secure else "80"}
        request.is_secure = lambda: secure  # type: ignore[method-assign]
        found = (
            _middleware_headers(XFrameOptionsMiddleware, request),
            _middleware_headers(SecurityMiddleware, request),
        )
        _django_headers[secure] = found
    return found


def _middleware_headers(middleware: type[Any], request: HttpRequest) -> list[tuple[bytes, bytes]]:
    response = HttpResponse()
    del response["Content-Type"]
    middleware(lambda _: response).process_response(request, response)
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in response.items()]


@receiver(setting_changed)
def _settings_changed(**kwargs: Any) -> None:
    _django_headers.clear()
    _plain.clear()


_plain: dict[tuple[bytes, bool], bool] = {}  # (Host header, https) -> plain_request's verdict


def plain_request(scope: Scope) -> bool:
    """A request Django's middleware would pass through unchanged: an allowed host, and no HTTPS
    redirect due. Anything else goes to Django, which answers it as it always does. The verdict
    for a Host header is kept (for at most 256 of them: any client may send any Host)."""
    host = b""
    for name, value in scope.get("headers", ()):
        if name == b"host":
            host = value
            break
    key = (host, scope.get("scheme") == "https")
    found = _plain.get(key)
    if found is None:
        redirect = settings.SECURE_SSL_REDIRECT and not key[1]
        found = not redirect and validate_host(split_domain_port(host.decode("latin-1"))[0], settings.ALLOWED_HOSTS)
        if len(_plain) < 256:
            _plain[key] = found
    return found


def query_values(query: bytes) -> dict[str, str]:
    """A query string's values as Django's `QueryDict.get` reads them (the last of a repeated name,
    blanks kept, UTF-8, else Latin-1), without building a QueryDict (a third of a fast read's own
    CPU). Fallback past DATA_UPLOAD_MAX_NUMBER_FIELDS fields: Django answers that request."""
    try:
        text = query.decode()
    except UnicodeDecodeError:
        text = query.decode("iso-8859-1")
    try:
        pairs = parse_qsl(
            text, keep_blank_values=True, encoding="utf-8", max_num_fields=settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        )
    except ValueError as exc:
        raise Fallback from exc
    return dict(pairs)


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
