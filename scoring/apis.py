"""Signed endpoints (match servers and the studio's backend, never a player's app), each declared
once (common/operations.py): results, batches, player profiles, friendships, a player's own rank,
the events feed (its events are the `events` app's; the signature is checked here, above it).
urls.py builds Django's views from `OPERATIONS`, drf-spectacular the OpenAPI document, and
fastpath.py answers single results in groups by the same declaration. Thin: verify, parse, one call.
"""

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from anticheat.signed import PARSE_ERROR, signed, signed_key, verified_json
from boards.kinds import BOARD_NAMES
from boards.models import Player
from boards.params import (
    BOARD_ERRORS,
    BOARD_PARAM,
    BOARD_QUERY,
    NOT_RANKED,
    UNKNOWN_BOARD,
    not_ranked,
    resolve,
    throttle_reads,
)
from boards.serializers import TiersSerializer, TierStandingsSerializer
from boards.services import board_tiers_set, friendship_add, friendship_remove
from boards.tier_standings import board_tier_standings
from boards.tiers import NO_TIERS, BadTiers, tiers_parse
from common.api_errors import NOT_FOUND, Problem
from common.formats import PLAYER_ID_RE
from common.openapi import FRIEND_PARAM, GAME_PARAM, MATCH_PARAM, PLAYER_PARAM
from common.operations import INVALID, Args, Operation, Query, integer
from events.selectors import EventPage
from events.serializers import EventPageSerializer
from events.services import events_feed
from events.types import TYPES_PATTERN, UnknownType, types_parse
from seasons.models import Game
from seasons.selectors import game_get

from . import serializers
from .players import player_delete, player_update
from .reporting import write_report
from .selectors import player_own_rank
from .services import MatchOutcome, matches_submit
from .validation import game_match_validate, parse_match_id, single_match_parse

MAX_BATCH = 1000
REPLAY_HEADER = "Idempotent-Replayed"
SEASON_CLOSED = Problem(409, "season_closed", "`played_at` falls in no open season (nothing stored)")
IDEMPOTENCY_CONFLICT = Problem(409, "idempotency_conflict", "this match id was sent before with another body")
BODY_ERRORS = (INVALID, PARSE_ERROR)  # of a request with a JSON body


def _game_or_404(slug: str) -> Game:
    found = game_get(slug=slug)
    if found is None:
        raise NOT_FOUND(f"No game {slug!r}.")
    return found


def _respond(outcome: MatchOutcome) -> Response:
    headers = {REPLAY_HEADER: "true"} if outcome.replayed else None
    return Response(outcome.body, status=outcome.http_status, headers=headers)


def match_results_submit(request: Request, args: Args) -> Response:
    # fastpath.py answers these first, in groups, by the same functions.
    key, data = verified_json(request, args["game"])
    game = _game_or_404(args["game"])
    match = single_match_parse(data, raw_match_id=args["match_id"], game=game, now=timezone.now())
    [outcome] = matches_submit(game=game, key=key, matches=[match], now=timezone.now())
    write_report(game=game.slug, answers=[(outcome.http_status, outcome.body)])
    return _respond(outcome)


def match_results_submit_batch(request: Request, args: Args) -> Response:
    key, data = verified_json(request, args["game"])
    game = _game_or_404(args["game"])
    if not isinstance(data, dict) or not isinstance(data.get("matches"), list):
        raise INVALID('The body must be {"matches": [...]}.')
    items = data["matches"]
    if not 1 <= len(items) <= MAX_BATCH:
        raise INVALID(f"A batch holds 1 to {MAX_BATCH} matches.")
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
        parsed, errors = game_match_validate(item, match_id=parsed_id, game=game, now=now)
        prepared.append((i, (parsed_id, parsed, errors)))
    outcomes = matches_submit(game=game, key=key, matches=[m for _, m in prepared], now=now)
    for (i, _), outcome in zip(prepared, outcomes, strict=True):
        answers[i] = {**outcome.body, "http_status": outcome.http_status}
    write_report(game=game.slug, answers=[(a["http_status"], a) for a in answers if a is not None])
    return Response({"matches": answers}, status=200)


def _player_or_404(player_id: str) -> None:
    if not PLAYER_ID_RE.match(player_id):
        raise NOT_FOUND("No such player.")


def player_patch(request: Request, args: Args) -> Player:
    key, data = verified_json(request, args["game"])
    _player_or_404(args["player_id"])
    if not isinstance(data, dict) or not data.keys() & {"display_name", "hidden"}:
        raise INVALID("Send display_name and/or hidden.")
    patch = serializers.PlayerPatchSerializer(data=data)
    if not patch.is_valid():
        raise ValidationError(patch.errors)
    try:
        return player_update(
            game=key.game,
            player_id=args["player_id"],
            display_name=patch.validated_data.get("display_name"),
            hidden=patch.validated_data.get("hidden"),
        )
    except Player.DoesNotExist as exc:
        raise NOT_FOUND("This account was deleted.") from exc


def player_remove(request: Request, args: Args) -> None:
    key = signed_key(request, args["game"])
    _player_or_404(args["player_id"])
    player_delete(game=key.game, player_id=args["player_id"])


def _board_kind(board: str) -> str:
    if board not in BOARD_NAMES:
        raise UNKNOWN_BOARD(f"No board {board!r}; boards: {', '.join(BOARD_NAMES)}.")
    return board


def tiers_put(request: Request, args: Args) -> dict[str, Any]:
    key, data = verified_json(request, args["game"])
    board = _board_kind(args["board"])
    try:
        tiers = tiers_parse(data, ascending=key.game.ascending)
    except BadTiers as exc:
        raise INVALID(str(exc)) from exc
    board_tiers_set(game=key.game, board=board, tiers=tiers)
    return tiers.document()


def tiers_get(request: Request, args: Args) -> dict[str, Any]:
    throttle_reads(request)
    found = board_tier_standings(view=resolve(request, args))
    if found is None:
        raise NO_TIERS(f"The board {args['board']!r} has no tiers.")
    return found


def tiers_remove(request: Request, args: Args) -> None:
    key = signed_key(request, args["game"])
    board_tiers_set(game=key.game, board=_board_kind(args["board"]), tiers=None)


def player_rank(request: Request, args: Args) -> Any:
    signed_key(request, args["game"])
    view = resolve(request, args, board=args["board"] or "all")
    own = player_own_rank(view=view, player_id=args["player_id"])
    if own is None:
        raise not_ranked(args["player_id"])
    return own


def friendship_put(request: Request, args: Args) -> None:
    key = signed_key(request, args["game"])
    for pid in (args["player_id"], args["friend_id"]):
        if not PLAYER_ID_RE.match(pid):
            raise INVALID(f"{pid!r} is not a player id.")
    if args["player_id"] == args["friend_id"]:
        raise INVALID("A player cannot befriend themselves.")
    friendship_add(game=key.game, player_id=args["player_id"], friend_id=args["friend_id"])


def friendship_delete(request: Request, args: Args) -> None:
    key = signed_key(request, args["game"])
    friendship_remove(game=key.game, player_id=args["player_id"], friend_id=args["friend_id"])


def events_read(request: Request, args: Args) -> EventPage:
    key = signed_key(request, args["game"])
    types = None
    if args["types"] is not None:
        try:
            types = types_parse(args["types"])
        except UnknownType as exc:
            raise INVALID(f"types: {exc}") from exc
    return events_feed(game=key.game, after=args["after"], limit=args["limit"], types=types, now=timezone.now())


BOARD = Query("board", "The board (default `all`).", {"type": "string", "enum": list(BOARD_NAMES)})
FEED_QUERY = (
    integer("after", low=0, high=2**63 - 1, default=0, description="List the events after this id (default 0)."),
    integer("limit", low=1, high=1000, default=100, description="At most this many events (1 to 1,000)."),
    Query(
        "types",
        "Only events of these types, comma-separated (default: every type).",
        {"type": "string", "pattern": TYPES_PATTERN},
    ),
)
_PLAYER_PATH = (GAME_PARAM, PLAYER_PARAM)
_FRIEND_PATH = (GAME_PARAM, PLAYER_PARAM, FRIEND_PARAM)


OPERATIONS: list[Operation] = [
    signed(
        id="match_results_submit_batch",
        method="POST",
        path="games/{game}/matches/batch",
        route="matches-batch",
        call=match_results_submit_batch,
        description=(
            "Up to 1,000 matches in one signed request. Always 200 when the envelope is valid: each "
            "match has its own answer and `http_status` (202, 200 replay, 400, 409), in order. "
            "One bad match does not sink the others."
        ),
        path_params=(GAME_PARAM,),
        request=serializers.BatchInSerializer,
        answer=serializers.BatchAnswerSerializer,
        errors=(*BODY_ERRORS, NOT_FOUND),
    ),
    signed(
        id="match_results_submit",
        method="POST",
        path="games/{game}/matches/{match_id}/results",
        route="match-results",
        call=match_results_submit,
        description=(
            "Submit one match's results. 202 with a status per result; the same match id with the "
            "same content again is 200 with the first answer and `Idempotent-Replayed: true`; with "
            "a different body 409 `idempotency_conflict`. Nothing is stored for a refused request."
        ),
        path_params=(GAME_PARAM, MATCH_PARAM),
        request=serializers.MatchInSerializer,
        answer=serializers.MatchAnswerSerializer,
        status=202,
        also={200: serializers.MatchAnswerSerializer},
        answer_headers=(
            OpenApiParameter(
                "Idempotent-Replayed",
                {"type": "string", "enum": ["true"]},
                OpenApiParameter.HEADER,
                description="On the 200 of a match sent again with the same content: the first answer, unchanged.",
                response=[200],
            ),
        ),
        errors=(*BODY_ERRORS, NOT_FOUND, SEASON_CLOSED, IDEMPOTENCY_CONFLICT),
    ),
    signed(
        id="player_update",
        method="PATCH",
        path="games/{game}/players/{player_id}",
        route="player",
        call=player_patch,
        description="Set `display_name` and/or `hidden`. A hidden player leaves every public answer at once.",
        path_params=_PLAYER_PATH,
        request=serializers.PlayerPatchSerializer,
        answer=serializers.PlayerSerializer,
        errors=(*BODY_ERRORS, NOT_FOUND),
    ),
    signed(
        id="player_delete",
        method="DELETE",
        path="games/{game}/players/{player_id}",
        route="player",
        call=player_remove,
        description="Account deletion: off every live board at once, ledger rows pseudonymised, never shown again.",
        path_params=_PLAYER_PATH,
        status=204,
        errors=(NOT_FOUND,),
    ),
    signed(
        id="player_rank",
        method="GET",
        path="games/{game}/players/{player_id}/rank",
        route="player-rank",
        call=player_rank,
        description=(
            "The player's own score and rank, also when hidden (counted as if visible). `period` is "
            "checked against the board named in `board` (400 when it does not fit it)."
        ),
        path_params=_PLAYER_PATH,
        query=(BOARD, *BOARD_QUERY),
        answer=serializers.OwnRankSerializer,
        errors=(*BOARD_ERRORS, NOT_RANKED),
    ),
    signed(
        id="friendship_add",
        method="PUT",
        path="games/{game}/players/{player_id}/friends/{friend_id}",
        route="friendship",
        call=friendship_put,
        description="A confirmed, mutual friendship (idempotent).",
        path_params=_FRIEND_PATH,
        status=204,
        errors=(INVALID,),
    ),
    signed(
        id="friendship_remove",
        method="DELETE",
        path="games/{game}/players/{player_id}/friends/{friend_id}",
        route="friendship",
        call=friendship_delete,
        description="Ends a friendship (idempotent).",
        path_params=_FRIEND_PATH,
        status=204,
    ),
    Operation(
        id="board_tiers",
        method="GET",
        path="games/{game}/boards/{board}/tiers",
        route="board-tiers",
        call=tiers_get,
        description=(
            "The board kind's tiers, best first, each with its players now and their lowest and highest score, "
            "on this board (region, season, period as every board read); 404 `no_tiers` without tiers."
        ),
        path_params=(GAME_PARAM, BOARD_PARAM),
        query=BOARD_QUERY,
        answer=TierStandingsSerializer,
        errors=(*BOARD_ERRORS, NO_TIERS),
    ),
    signed(
        id="board_tiers_put",
        method="PUT",
        path="games/{game}/boards/{board}/tiers",
        route="board-tiers",
        call=tiers_put,
        description=(
            "Set a board kind's tiers (every region and period of it): `by` score, rank or percent; the tiers "
            "best first, each but the last with a cutoff, strictly looser down the list. Every entry and player "
            "answer of the board then carries its `tier`."
        ),
        path_params=(GAME_PARAM, BOARD_PARAM),
        request=TiersSerializer,
        answer=TiersSerializer,
        errors=(*BODY_ERRORS, UNKNOWN_BOARD),
    ),
    signed(
        id="board_tiers_delete",
        method="DELETE",
        path="games/{game}/boards/{board}/tiers",
        route="board-tiers",
        call=tiers_remove,
        description="Remove a board kind's tiers (idempotent): its answers carry no `tier` again.",
        path_params=(GAME_PARAM, BOARD_PARAM),
        status=204,
        errors=(UNKNOWN_BOARD,),
    ),
    signed(
        id="events_feed",
        method="GET",
        path="games/{game}/events",
        route="events",
        call=events_read,
        description=(
            "The game's events of the last 30 days after `after`, in id order, none skipped and none twice, "
            "even when their transactions commit out of id order; an event is listed once its transaction "
            "has committed. `next` is the last id listed (`after` on an empty page): the next `after`."
        ),
        path_params=(GAME_PARAM,),
        query=FEED_QUERY,
        answer=EventPageSerializer,
        errors=(INVALID,),
    ),
]
