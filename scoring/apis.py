"""Signed submission endpoints (match servers only). Thin: verify, parse, one service call."""

import json
from typing import Any

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from anticheat.signed import SIGNATURE_HEADERS, signed_key
from leaderboard_site.api_errors import ApiError
from seasons.selectors import game_get

from . import serializers
from .services import MatchOutcome, matches_submit
from .validation import parse_match_id, validate_match

MAX_BATCH = 1000
REPLAY_HEADER = "Idempotent-Replayed"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def verified_json(request: Request, game: str) -> tuple[Any, Any]:
    """Check the signature over the raw body first (DRF #2774), then parse it strictly."""
    key = signed_key(request, game)
    try:
        data = json.loads(request._request.body.decode("utf-8"), parse_constant=_reject_constant)
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
            dimensions=tuple(game_obj.dimensions or ()),
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
                dimensions=tuple(game_obj.dimensions or ()),
            )
            prepared.append((i, (parsed_id, parsed, errors)))
        outcomes = matches_submit(game=game_obj, key=key, matches=[m for _, m in prepared], now=now)
        for (i, _), outcome in zip(prepared, outcomes, strict=True):
            answers[i] = {**outcome.body, "http_status": outcome.http_status}
        return Response({"matches": answers}, status=200)
