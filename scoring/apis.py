"""Signed endpoints (match servers and the studio's backend, never a player's app): results,
batches, player profiles, friendships, a player's own rank. Thin: verify, parse, one call."""

import json
from typing import Any

import orjson
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from anticheat.models import ServerKey
from anticheat.signed import SIGNATURE_HEADERS, signed_key
from boards.kinds import BOARD_NAMES
from boards.models import Player
from boards.params import BOARD_PARAMS, not_ranked, resolve
from boards.services import friendship_add, friendship_remove
from common.api_errors import ApiError, ErrorSerializer
from common.formats import PLAYER_ID_RE
from common.openapi import FRIEND_PARAM, GAME_PARAM, MATCH_PARAM, PLAYER_PARAM
from seasons.selectors import game_get

from . import serializers
from .players import player_delete, player_update
from .reporting import write_report
from .selectors import player_own_rank
from .services import MatchOutcome, matches_submit
from .validation import game_match_validate, parse_match_id, single_match_parse

MAX_BATCH = 1000
REPLAY_HEADER = "Idempotent-Replayed"


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
        raise ApiError(400, "parse_error", f"Malformed JSON: {exc}") from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


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
        parameters=[GAME_PARAM, MATCH_PARAM, *SIGNATURE_HEADERS],
        request=serializers.MatchInSerializer,
        responses={
            202: serializers.MatchAnswerSerializer,
            200: serializers.MatchAnswerSerializer,
            400: ErrorSerializer,
            401: ErrorSerializer,
            403: ErrorSerializer,
            409: ErrorSerializer,
            429: ErrorSerializer,
            503: ErrorSerializer,
        },
        description=(
            "Submit one match's results. 202 with a status per result; the same match id with the "
            "same content again is 200 with the first answer and `Idempotent-Replayed: true`; with "
            "a different body 409 `idempotency_conflict`. Nothing is stored for a refused request."
        ),
    )
    def post(self, request: Request, game: str, match_id: str) -> Response:
        # scoring/fastpath.py answers these first, in groups, by the same functions.
        key, data = verified_json(request, game)
        game_obj = _game_or_404(game)
        match = single_match_parse(data, raw_match_id=match_id, game=game_obj, now=timezone.now())
        [outcome] = matches_submit(game=game_obj, key=key, matches=[match], now=timezone.now())
        write_report(game=game_obj.slug, answers=[(outcome.http_status, outcome.body)])
        return _respond(outcome)


def _respond(outcome: MatchOutcome) -> Response:
    headers = {REPLAY_HEADER: "true"} if outcome.replayed else None
    return Response(outcome.body, status=outcome.http_status, headers=headers)


class MatchBatchSubmitApi(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="match_results_submit_batch",
        parameters=[GAME_PARAM, *SIGNATURE_HEADERS],
        request=serializers.BatchInSerializer,
        responses={
            200: serializers.BatchAnswerSerializer,
            400: ErrorSerializer,
            401: ErrorSerializer,
            403: ErrorSerializer,
            503: ErrorSerializer,
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
            parsed, errors = game_match_validate(item, match_id=parsed_id, game=game_obj, now=now)
            prepared.append((i, (parsed_id, parsed, errors)))
        outcomes = matches_submit(game=game_obj, key=key, matches=[m for _, m in prepared], now=now)
        for (i, _), outcome in zip(prepared, outcomes, strict=True):
            answers[i] = {**outcome.body, "http_status": outcome.http_status}
        write_report(game=game_obj.slug, answers=[(a["http_status"], a) for a in answers if a is not None])
        return Response({"matches": answers}, status=200)


def _player_or_404(player_id: str) -> None:
    if not PLAYER_ID_RE.match(player_id):
        raise ApiError(404, "not_found", "No such player.")


class PlayerApi(APIView):
    """A player's profile and account."""

    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="player_update",
        parameters=[GAME_PARAM, PLAYER_PARAM, *SIGNATURE_HEADERS],
        request=serializers.PlayerPatchSerializer,
        responses={200: serializers.PlayerSerializer, 400: ErrorSerializer, 401: ErrorSerializer, 404: ErrorSerializer},
        description="Set `display_name` and/or `hidden`. A hidden player leaves every public answer at once.",
    )
    def patch(self, request: Request, game: str, player_id: str) -> Response:
        key, data = verified_json(request, game)
        _player_or_404(player_id)
        if not isinstance(data, dict) or not data.keys() & {"display_name", "hidden"}:
            raise ApiError(400, "invalid", "Send display_name and/or hidden.")
        patch = serializers.PlayerPatchSerializer(data=data)
        if not patch.is_valid():
            raise ValidationError(patch.errors)
        try:
            player = player_update(
                game=key.game,
                player_id=player_id,
                display_name=patch.validated_data.get("display_name"),
                hidden=patch.validated_data.get("hidden"),
            )
        except Player.DoesNotExist as exc:
            raise ApiError(404, "not_found", "This account was deleted.") from exc
        return Response(serializers.PlayerSerializer(player).data)

    @extend_schema(
        operation_id="player_delete",
        parameters=[GAME_PARAM, PLAYER_PARAM, *SIGNATURE_HEADERS],
        request=None,
        responses={204: None, 401: ErrorSerializer, 404: ErrorSerializer},
        description="Account deletion: off every live board at once, ledger rows pseudonymised, never shown again.",
    )
    def delete(self, request: Request, game: str, player_id: str) -> Response:
        key = signed_key(request, game)
        _player_or_404(player_id)
        player_delete(game=key.game, player_id=player_id)
        return Response(status=204)


class PlayerRankApi(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="player_rank",
        parameters=[
            PLAYER_PARAM,
            *SIGNATURE_HEADERS,
            OpenApiParameter("board", {"type": "string", "enum": list(BOARD_NAMES)}, description="Default `all`."),
            *BOARD_PARAMS,
        ],
        responses={
            200: serializers.OwnRankSerializer,
            400: ErrorSerializer,
            401: ErrorSerializer,
            404: ErrorSerializer,
        },
        description=(
            "The player's own score and rank, also when hidden (counted as if visible). `period` is "
            "checked against the board named in `board` (400 when it does not fit it)."
        ),
    )
    def get(self, request: Request, game: str, player_id: str) -> Response:
        signed_key(request, game)
        view = resolve(request, game, request.query_params.get("board") or "all")
        own = player_own_rank(view=view, player_id=player_id)
        if own is None:
            raise not_ranked(player_id)
        return Response(serializers.OwnRankSerializer(own).data)


class FriendshipApi(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="friendship_add",
        parameters=[GAME_PARAM, PLAYER_PARAM, FRIEND_PARAM, *SIGNATURE_HEADERS],
        request=None,
        responses={204: None, 400: ErrorSerializer, 401: ErrorSerializer},
        description="A confirmed, mutual friendship (idempotent).",
    )
    def put(self, request: Request, game: str, player_id: str, friend_id: str) -> Response:
        key = signed_key(request, game)
        for pid in (player_id, friend_id):
            if not PLAYER_ID_RE.match(pid):
                raise ApiError(400, "invalid", f"{pid!r} is not a player id.")
        if player_id == friend_id:
            raise ApiError(400, "invalid", "A player cannot befriend themselves.")
        friendship_add(game=key.game, player_id=player_id, friend_id=friend_id)
        return Response(status=204)

    @extend_schema(
        operation_id="friendship_remove",
        parameters=[GAME_PARAM, PLAYER_PARAM, FRIEND_PARAM, *SIGNATURE_HEADERS],
        request=None,
        responses={204: None, 401: ErrorSerializer},
        description="Ends a friendship (idempotent).",
    )
    def delete(self, request: Request, game: str, player_id: str, friend_id: str) -> Response:
        key = signed_key(request, game)
        friendship_remove(game=key.game, player_id=player_id, friend_id=friend_id)
        return Response(status=204)
