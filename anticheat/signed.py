"""Signed requests at the HTTP edge: the raw path and body, the key, its request bucket."""

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

from common.api_errors import THROTTLED

from .models import ServerKey
from .services import NOT_AUTHENTICATED, SIGNATURE_REFUSED, WRONG_GAME, request_verify, rules_for, server_key_throttle

SIGNED_ERRORS = (NOT_AUTHENTICATED, SIGNATURE_REFUSED, WRONG_GAME, THROTTLED)  # of every signed request

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
