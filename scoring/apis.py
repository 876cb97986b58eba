"""Signed submission endpoints (match servers only). Thin: verify, parse, one service call."""

import json
from typing import Any

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from anticheat.services import request_verify, rules_for, server_key_throttle
from leaderboard_site.api_errors import ApiError
from seasons.selectors import game_get

from . import serializers
from .services import MatchOutcome, matches_submit
from .validation import parse_match_id, validate_match

MAX_BATCH = 1000
REPLAY_HEADER = "Idempotent-Replayed"

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


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def verified_json(request: Request, game: str) -> tuple[Any, Any]:
    """Check the signature over the raw body first (DRF #2774), then parse it strictly."""
    body = request._request.body
    key = request_verify(
        game_slug=game,
        method=request.method or "POST",
        path=signed_path(request),
        body=body,
        headers=request.headers,
        now=timezone.now(),
    )
    retry_after = server_key_throttle(key=key, rules=rules_for(game=key.game), now=timezone.now())
    if retry_after is not None:
        raise ApiError(
            429,
            "throttled",
            f"Over this key's rate limit; retry in {retry_after} s. Nothing was stored.",
            headers={"Retry-After": str(retry_after)},
        )
    try:
        data = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, "parse_error", f"Malformed JSON: {exc}") from exc
    return key, data


def _game_or_404(slug: str):
    found = game_get(slug=slug)
    if found is None:
        raise ApiError(404, "not_found", f"No game {slug!r}.")
    return found


class MatchResultSubmitApi(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="match_results_submit",
        parameters=SIGNATURE_HEADERS,
        request=serializers.MatchInSerializer,
        responses={
            202: serializers.MatchAnswerSerializer,
            200: serializers.MatchAnswerSerializer,
            400: serializers.ErrorSerializer,
            401: serializers.ErrorSerializer,
            403: serializers.ErrorSerializer,
            409: serializers.ErrorSerializer,
            429: serializers.ErrorSerializer,
            503: serializers.ErrorSerializer,
        },
        description=(
            "Submit one match's results. 202 with a status per result; the same match id with the "
            "same content again is 200 with the first answer and `Idempotent-Replayed: true`; with "
            "a different body 409 `idempotency_conflict`. Nothing is stored for a refused request."
        ),
    )
    def post(self, request: Request, game: str, match_id: str) -> Response:
        key, data = verified_json(request, game)
        game_obj = _game_or_404(game)
        parsed_id = parse_match_id(match_id)
        if parsed_id is None:
            raise ApiError(400, "invalid", "The match id must be a UUID.")
        parsed, errors = validate_match(
            data,
            match_id=parsed_id,
            max_points=game_obj.max_points_per_match,
            now=timezone.now(),
            max_future_s=settings.PLAYED_AT_MAX_FUTURE_S,
        )
        [outcome] = matches_submit(game=game_obj, key=key, matches=[(parsed_id, parsed, errors)], now=timezone.now())
        return _respond(outcome)


def _respond(outcome: MatchOutcome) -> Response:
    headers = {REPLAY_HEADER: "true"} if outcome.replayed else None
    return Response(outcome.body, status=outcome.http_status, headers=headers)


class MatchBatchSubmitApi(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="match_results_submit_batch",
        parameters=SIGNATURE_HEADERS,
        request=serializers.BatchInSerializer,
        responses={
            200: serializers.BatchAnswerSerializer,
            400: serializers.ErrorSerializer,
            401: serializers.ErrorSerializer,
            403: serializers.ErrorSerializer,
            503: serializers.ErrorSerializer,
        },
        description=(
            "Up to 1,000 matches in one signed request. Always 200 when the envelope is valid: each "
            "match has its own answer and `http_status` (202, 200 replay, 400, 409), in order. "
            "One bad match does not sink the others."
        ),
    )
    def post(self, request: Request, game: str) -> Response:
        key, data = verified_json(request, game)
        game_obj = _game_or_404(game)
        if not isinstance(data, dict) or not isinstance(data.get("matches"), list):
            raise ApiError(400, "invalid", 'The body must be {"matches": [...]}.')
        items = data["matches"]
        if not 1 <= len(items) <= MAX_BATCH:
            raise ApiError(400, "invalid", f"A batch holds 1 to {MAX_BATCH} matches.")
        now = timezone.now()
        prepared = []
        answers: list[dict[str, Any] | None] = [None] * len(items)
        for i, item in enumerate(items):
            raw_id = item.get("match_id") if isinstance(item, dict) else None
            parsed_id = parse_match_id(raw_id)
            if parsed_id is None:
                answers[i] = {
                    "match_id": ["A match id is a UUID."],
                    "detail": "Invalid input.",
                    "code": "invalid",
                    "http_status": 400,
                }
                continue
            parsed, errors = validate_match(
                item,
                match_id=parsed_id,
                max_points=game_obj.max_points_per_match,
                now=now,
                max_future_s=settings.PLAYED_AT_MAX_FUTURE_S,
            )
            prepared.append((i, (parsed_id, parsed, errors)))
        outcomes = matches_submit(game=game_obj, key=key, matches=[m for _, m in prepared], now=now)
        for (i, _), outcome in zip(prepared, outcomes, strict=True):
            answers[i] = {**outcome.body, "http_status": outcome.http_status}
        return Response({"matches": answers}, status=200)
