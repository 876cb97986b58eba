"""Signed requests at the HTTP edge: the raw path and body, the key, its request bucket; the
declaration of a signed operation (`signed`) and its JSON body read after the signature
(`verified_json`), for every app that declares signed endpoints."""

import json
from typing import Any

import orjson
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

from common.api_errors import LEDGER_DOWN, THROTTLED, Problem
from common.operations import Operation

from .models import ServerKey
from .services import NOT_AUTHENTICATED, SIGNATURE_REFUSED, WRONG_GAME, request_verify, rules_for, server_key_throttle

SIGNED_ERRORS = (NOT_AUTHENTICATED, SIGNATURE_REFUSED, WRONG_GAME, THROTTLED)  # of every signed request
PARSE_ERROR = Problem(400, "parse_error", "the body is not JSON")

SIGNATURE_HEADERS = [
    OpenApiParameter("X-Leaderboard-Key", str, OpenApiParameter.HEADER, required=True, description="Key id."),
    OpenApiParameter(
        "X-Leaderboard-Timestamp", str, OpenApiParameter.HEADER, required=True, description="Unix seconds."
    ),
    OpenApiParameter(
        "X-Leaderboard-Signature",
        str,
        OpenApiParameter.HEADER,
        required=True,
        description="v1= + hex HMAC-SHA256 of timestamp\\nMETHOD\\npath?query\\nbody with the key's secret.",
    ),
]


def signed_path(request: Request) -> str:
    """The request path with its query string exactly as sent (the raw ASGI path when we have it)."""
    scope = getattr(request._request, "scope", None)
    if scope is not None:
        raw = scope.get("raw_path") or scope.get("path", "").encode()
        path = raw.decode("utf-8", errors="replace")
        query = scope.get("query_string") or b""
        return path + ("?" + query.decode("utf-8", errors="replace") if query else "")
    meta = request._request.META
    query = meta.get("QUERY_STRING", "")
    return meta.get("PATH_INFO", "") + ("?" + query if query else "")


def signed_key(request: Request, game: str) -> ServerKey:
    """Verify the signature over the raw body (before anything parses it, DRF #2774), then spend
    one token of the key's request bucket: 401/403 as in docs/api.md, 429 with Retry-After when over."""
    key = request_verify(
        game_slug=game,
        method=request.method or "POST",
        path=signed_path(request),
        body=request._request.body,
        headers=request.headers,
        now=timezone.now(),
    )
    retry_after = server_key_throttle(key=key, rules=rules_for(game=key.game), now=timezone.now())
    if retry_after is not None:
        raise THROTTLED(
            f"Over this key's rate limit; retry in {retry_after} s. Nothing was stored.",
            {"Retry-After": str(retry_after)},
        )
    return key


def verified_json(request: Request, game: str) -> tuple[ServerKey, Any]:
    """Check the signature over the raw body first (DRF #2774), then parse it strictly."""
    key = signed_key(request, game)
    body = request._request.body
    try:
        return key, orjson.loads(body)  # strict JSON (no NaN or Infinity), several times json's speed
    except orjson.JSONDecodeError:
        pass
    try:  # what orjson refuses but JSON allows (integers past 64 bits) reaches the validation
        return key, json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PARSE_ERROR(f"Malformed JSON: {exc}") from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def signed(**declared: Any) -> Operation:
    """An operation of the signed API: the signature's headers, and before its own errors those of
    every signed request (401, 403, 429) and of a ledger that cannot be reached (503)."""
    errors = dict.fromkeys((*SIGNED_ERRORS, LEDGER_DOWN, *declared.pop("errors", ())))
    return Operation(headers=tuple(SIGNATURE_HEADERS), errors=tuple(errors), **declared)
