"""The tournament endpoints, each declared once (common/operations.py): the signed writes (create
or replace, end, enter) and the public reads of tournaments and their periods. urls.py builds
Django's views from `OPERATIONS`, drf-spectacular the OpenAPI document. Thin: parse, one call."""

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from anticheat.signed import PARSE_ERROR, signed, signed_key, verified_json
from boards.params import NOT_RANKED, N, R, not_ranked, throttle_reads
from common.api_errors import BOARDS_DOWN, NOT_FOUND, THROTTLED, ApiError
from common.formats import PLAYER_ID_RE
from common.openapi import GAME_PARAM, PLAYER_PARAM, path_param
from common.operations import INVALID, Args, Operation, Query, digits_only, integer
from seasons.models import Game
from seasons.selectors import game_get

from . import serializers, standings
from .finals import final_around, final_player, final_top, period_final_get
from .models import Tournament, TournamentPeriod
from .periods import MAX_PERIODS
from .problems import (
    NOT_ENTERED,
    TOURNAMENT_FULL,
    TOURNAMENT_OVER,
    TOURNAMENT_STARTED,
    UNKNOWN_PERIOD,
    UNKNOWN_TOURNAMENT,
)
from .selectors import period_status, period_view, periods_list, tournament_get, tournament_view, tournaments_list
from .services import entrant_join, tournament_end, tournament_put
from .standings import Call, StandingView, TournamentConf, UnknownPeriod
from .validation import tournament_validate

TOURNAMENT_ID_PATTERN = r"^[a-z0-9-]{1,40}$"
TOURNAMENT_ID_RE = re.compile(TOURNAMENT_ID_PATTERN)
TOURNAMENT_PARAM = path_param("tournament_id", TOURNAMENT_ID_PATTERN, "The tournament's id, unique within the game.")
_PATH = (GAME_PARAM, TOURNAMENT_PARAM)
STATUS = Query(
    "status",
    "Only the tournaments in this state.",
    {"type": "string", "enum": ["active", "upcoming", "ended"]},
)
CATEGORY = Query("category", "Only this category (0-127).", {"type": "integer", "minimum": 0, "maximum": 127})
PERIOD = integer(
    "period",
    low=1,
    high=MAX_PERIODS,
    default=None,  # type: ignore[arg-type]
    description="The period's index (1, 2, ...); default the active one, else the last that started.",
)


def _game(slug: str) -> Game:
    found = game_get(slug=slug)
    if found is None:
        raise NOT_FOUND(f"No game {slug!r}.")
    return found


def _tournament(game: Game, slug: str) -> Tournament:
    found = tournament_get(game=game, slug=slug) if len(slug) <= 40 else None
    if found is None:
        raise UNKNOWN_TOURNAMENT(f"No tournament {slug!r} in this game.")
    return found


def tournament_put_call(request: Request, args: Args) -> Response:
    key, data = verified_json(request, args["game"])
    slug = args["tournament_id"]
    if not TOURNAMENT_ID_RE.match(slug):
        raise INVALID("A tournament id is 1 to 40 of [a-z0-9-].")
    config, errors = tournament_validate(data)
    if config is None:
        raise ValidationError(errors)
    now = timezone.now()
    outcome = tournament_put(game=key.game, slug=slug, config=config, now=now)
    body = OPERATION_PUT.render(tournament_view(tournament=outcome.tournament, now=now))
    return Response(body, status=201 if outcome.created else 200)


def tournament_end_call(request: Request, args: Args) -> dict[str, Any]:
    key = signed_key(request, args["game"])
    now = timezone.now()
    ended = tournament_end(tournament=_tournament(key.game, args["tournament_id"]), now=now)
    return tournament_view(tournament=ended, now=now)


def entrant_put_call(request: Request, args: Args) -> Response:
    key = signed_key(request, args["game"])
    if not PLAYER_ID_RE.match(args["player_id"]):
        raise INVALID(f"{args['player_id']!r} is not a player id.")
    tournament = _tournament(key.game, args["tournament_id"])
    now = timezone.now()
    outcome = entrant_join(tournament=tournament, player_id=args["player_id"], now=now)
    body = {
        "tournament": tournament.slug,
        "player_id": args["player_id"],
        "period": period_view(tournament, outcome.period, now),
    }
    return Response(OPERATION_ENTER.render(body), status=201 if outcome.entered else 200)


def tournaments_get(request: Request, args: Args) -> dict[str, Any]:
    game = _game(args["game"])
    category = args["category"]
    if category is not None and (not digits_only(category) or not 0 <= int(category) <= 127):
        raise INVALID("category must be an integer from 0 to 127.")
    if args["status"] not in (None, "active", "upcoming", "ended"):
        raise INVALID("status must be active, upcoming or ended.")
    found = tournaments_list(
        game=game,
        now=timezone.now(),
        status=args["status"],
        category=int(category) if category is not None else None,
    )
    return {"tournaments": found}


def tournament_get_call(request: Request, args: Args) -> dict[str, Any]:
    tournament = _tournament(_game(args["game"]), args["tournament_id"])
    return tournament_view(tournament=tournament, now=timezone.now())


def periods_get(request: Request, args: Args) -> dict[str, Any]:
    tournament = _tournament(_game(args["game"]), args["tournament_id"])
    return {"periods": periods_list(tournament=tournament, now=timezone.now())}


@dataclass(frozen=True)
class StandingRead:
    """A read of a tournament period's board, for both entrances (standings.py): `call(view, args)`
    gives the script's KEYS and ARGV, `parse(view, args, reply)` the value (None: the player is not
    there, answered with `missing(args)`), `present(view, args, value)` what the answer's
    serializer renders; `final(tournament, final_period, view, args)` the value of a final period,
    from its standings in PostgreSQL (finals.py). The fast entrance (fastpath.py) serves every
    operation declared with one, for periods that are not final."""

    script: str
    call: Callable[[StandingView, Args], Call]
    parse: Callable[[StandingView, Args, Any], Any]
    present: Callable[[StandingView, Args, Any], Any]
    final: Callable[[Tournament, TournamentPeriod, StandingView, Args], Any]
    missing: Callable[[Args], ApiError] | None = None


def standing_view(conf: TournamentConf, index: int | None, now: datetime, status: Callable[[Any], str]) -> StandingView:
    """The period a read means (404 `unknown_period`), with its status as `status(period)` says."""
    try:
        period = standings.period_of(conf, index, now)
    except UnknownPeriod as exc:
        raise UNKNOWN_PERIOD(f"The tournament has no period {index}.") from exc
    return StandingView(conf=conf, period=period, status=status(period))


def standing_value(tournament: Tournament, view: StandingView, read: StandingRead, args: Args) -> Any:
    """What `read` gives for the period `view` resolved: from the frozen standings in PostgreSQL
    once the period is final (finals.py), else from its board in Redis."""
    final = period_final_get(tournament=tournament, index=view.period.index) if view.final else None
    if final is not None:
        return read.final(tournament, final, view, args)
    return standings.standing_select(
        tournament, view, read.script, read.call(view, args), lambda reply: read.parse(view, args, reply)
    )


def standing_operation(
    *, id: str, route: str, tail: str, read: StandingRead, answer: Any, description: str
) -> Operation:
    """A GET of a tournament period's board: `/games/{game}/tournaments/{tournament_id}/<tail>`."""

    def call(request: Request, args: Args) -> Any:
        throttle_reads(request)
        tournament = _tournament(_game(args["game"]), args["tournament_id"])
        now = timezone.now()
        conf = standings.conf_current(tournament)
        view = standing_view(conf, args["period"], now, lambda period: period_status(tournament, period, now))
        value = standing_value(tournament, view, read, args)
        if value is None and read.missing is not None:
            raise read.missing(args)
        return read.present(view, args, value)

    player = (PLAYER_PARAM,) if "{player_id}" in tail else ()
    missing = (NOT_ENTERED,) if tail == "players/{player_id}" else (NOT_RANKED,) if player else ()
    return Operation(
        id=id,
        method="GET",
        path=f"games/{{game}}/tournaments/{{tournament_id}}/{tail}",
        route=route,
        call=call,
        description=description,
        path_params=(*_PATH, *player),
        query=(*((R,) if tail.endswith("around") else (N,) if tail == "top" else ()), PERIOD),
        answer=answer,
        errors=(INVALID, NOT_FOUND, UNKNOWN_TOURNAMENT, UNKNOWN_PERIOD, *missing, THROTTLED, BOARDS_DOWN),
        fast=read,
    )


def _not_entered(args: Args) -> ApiError:
    return NOT_ENTERED(f"{args['player_id']!r} is not entered in that period.")


TOP = StandingRead(
    standings.TOP_SCRIPT,
    call=lambda view, args: standings.top_call(view, args["n"]),
    parse=lambda view, args, reply: standings.top_parse(view, reply)[1],
    final=lambda tournament, final, view, args: final_top(tournament=tournament, final=final, n=args["n"]),
    present=lambda view, args, entries: {
        "tournament": view.conf.slug,
        "period": view.period_json(),
        "final": view.final,
        "entries": entries,
    },
)
PLAYER = StandingRead(
    standings.PLAYER_SCRIPT,
    call=lambda view, args: standings.player_call(view, args["player_id"]),
    parse=lambda view, args, reply: standings.player_parse(view, args["player_id"], reply),
    final=lambda tournament, final, view, args: final_player(
        tournament=tournament, final=final, player_id=args["player_id"], max_attempts=view.conf.max_attempts
    ),
    present=lambda view, args, value: value,
    missing=_not_entered,
)
AROUND = StandingRead(
    standings.AROUND_SCRIPT,
    call=lambda view, args: standings.around_call(view, args["player_id"], args["r"]),
    parse=lambda view, args, reply: standings.around_parse(view, reply),
    final=lambda tournament, final, view, args: final_around(
        tournament=tournament, final=final, player_id=args["player_id"], r=args["r"]
    ),
    present=lambda view, args, entries: {"entries": entries},
    missing=lambda args: not_ranked(args["player_id"]),
)


OPERATION_PUT = signed(
    id="tournament_put",
    method="PUT",
    path="games/{game}/tournaments/{tournament_id}",
    route="tournament",
    call=tournament_put_call,
    description=(
        "Create a tournament (201), send the same configuration again (200), or replace it before its first "
        "period starts (200). After that only title, description, metadata and ends_at may change."
    ),
    path_params=_PATH,
    request=serializers.TournamentInSerializer,
    answer=serializers.TournamentSerializer,
    status=201,
    also={200: serializers.TournamentSerializer},
    errors=(INVALID, PARSE_ERROR, TOURNAMENT_STARTED),
)
OPERATION_ENTER = signed(
    id="tournament_entrant_put",
    method="PUT",
    path="games/{game}/tournaments/{tournament_id}/entrants/{player_id}",
    route="tournament-entrant",
    call=entrant_put_call,
    description=(
        "Enter the player in the active period, or between periods in the next one: 201 when entered, 200 when "
        "already in. Exact under any concurrency: never more than max_entrants."
    ),
    path_params=(*_PATH, PLAYER_PARAM),
    answer=serializers.EntrantSerializer,
    status=201,
    also={200: serializers.EntrantSerializer},
    errors=(INVALID, UNKNOWN_TOURNAMENT, TOURNAMENT_FULL, TOURNAMENT_OVER),
)

OPERATIONS: list[Operation] = [
    Operation(
        id="tournaments_list",
        method="GET",
        path="games/{game}/tournaments",
        route="tournaments",
        call=tournaments_get,
        description=(
            "The game's tournaments: active ones first (their period's end, soonest first), then upcoming (next "
            "start), then ended (latest end first)."
        ),
        path_params=(GAME_PARAM,),
        query=(STATUS, CATEGORY),
        answer=serializers.TournamentsSerializer,
        errors=(INVALID, NOT_FOUND),
    ),
    OPERATION_PUT,
    Operation(
        id="tournament_get",
        method="GET",
        path="games/{game}/tournaments/{tournament_id}",
        route="tournament",
        call=tournament_get_call,
        description="A tournament: its configuration, the period shown, the next start and whether one can enter.",
        path_params=_PATH,
        answer=serializers.TournamentSerializer,
        errors=(NOT_FOUND, UNKNOWN_TOURNAMENT),
    ),
    signed(
        id="tournament_end",
        method="POST",
        path="games/{game}/tournaments/{tournament_id}/end",
        route="tournament-end",
        call=tournament_end_call,
        description="The current period ends now (its grace then runs) and no later period starts.",
        path_params=_PATH,
        answer=serializers.TournamentSerializer,
        errors=(UNKNOWN_TOURNAMENT,),
    ),
    OPERATION_ENTER,
    Operation(
        id="tournament_periods",
        method="GET",
        path="games/{game}/tournaments/{tournament_id}/periods",
        route="tournament-periods",
        call=periods_get,
        description="The tournament's periods that have started (and the next one), newest first.",
        path_params=_PATH,
        answer=serializers.PeriodsSerializer,
        errors=(NOT_FOUND, UNKNOWN_TOURNAMENT),
    ),
    standing_operation(
        id="tournament_top",
        route="tournament-top",
        tail="top",
        read=TOP,
        answer=serializers.StandingTopSerializer,
        description=(
            "The period's top n by the tournament's order and the game's tie rule, each with its counted "
            "attempts and its reward band's reward (shown while the period runs too)."
        ),
    ),
    standing_operation(
        id="tournament_player",
        route="tournament-player",
        tail="players/{player_id}",
        read=PLAYER,
        answer=serializers.StandingPlayerSerializer,
        description=(
            "A player in the period: score, rank, the board's total, attempts used and allowed, reward; an "
            "entrant with no counted result has score and rank null; 404 `not_entered` otherwise."
        ),
    ),
    standing_operation(
        id="tournament_around",
        route="tournament-around",
        tail="players/{player_id}/around",
        read=AROUND,
        answer=serializers.StandingAroundSerializer,
        description="The 2r+1 entries around the player in the period; near either end the window slides.",
    ),
]
