"""The league endpoints, each declared once (common/operations.py): the signed PUT and the public
reads of a league, a player's cohort and history, and a cohort (docs/api.md, "Leagues"). urls.py
builds Django's views from `LEAGUE_OPERATIONS`, drf-spectacular the OpenAPI document. Thin: parse,
one call."""

import re
from dataclasses import dataclass
from typing import Any

from django.utils import timezone
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from anticheat.signed import PARSE_ERROR, signed, verified_json
from boards.params import throttle_reads
from common.api_errors import BOARDS_DOWN, NOT_FOUND, THROTTLED, ApiError
from common.formats import PLAYER_ID_RE
from common.openapi import GAME_PARAM, PLAYER_PARAM, path_param
from common.operations import INVALID, Args, Operation
from seasons.models import Game
from seasons.selectors import game_get

from . import league_serializers as shapes
from .league_models import League
from .league_problems import LEAGUE_STARTED, UNKNOWN_COHORT, UNKNOWN_LEAGUE
from .league_reads import cohort_find, cohort_view, history_view, player_view
from .league_selectors import league_get, league_view
from .league_services import league_put
from .league_standings import conf_current
from .league_validation import league_validate

LEAGUE_ID_PATTERN = r"^[a-z0-9-]{1,40}$"
LEAGUE_ID_RE = re.compile(LEAGUE_ID_PATTERN)
LEAGUE_PARAM = path_param("league_id", LEAGUE_ID_PATTERN, "The league's id, unique within the game.")
COHORT_PARAM = path_param(
    "cohort_id", r"^[0-9]{1,9}-[a-z0-9-]{1,32}-[0-9]{1,9}$", "The cohort's id: `{period}-{division}-{number}`."
)
_PATH = (GAME_PARAM, LEAGUE_PARAM)


def _game(slug: str) -> Game:
    found = game_get(slug=slug)
    if found is None:
        raise NOT_FOUND(f"No game {slug!r}.")
    return found


def _league(game: Game, slug: str) -> League:
    found = league_get(game=game, slug=slug)
    if found is None:
        raise UNKNOWN_LEAGUE(f"No league {slug!r} in this game.")
    return found


def league_put_call(request: Request, args: Args) -> Response:
    key, data = verified_json(request, args["game"])
    slug = args["league_id"]
    if not LEAGUE_ID_RE.match(slug):
        raise INVALID("A league id is 1 to 40 of [a-z0-9-].")
    config, errors = league_validate(data)
    if config is None:
        raise ValidationError(errors)
    now = timezone.now()
    outcome = league_put(game=key.game, slug=slug, config=config, now=now)
    body = OPERATION_PUT.render(league_view(league=outcome.league, now=now))
    return Response(body, status=201 if outcome.created else 200)


def league_get_call(request: Request, args: Args) -> dict[str, Any]:
    league = _league(_game(args["game"]), args["league_id"])
    return league_view(league=league, now=timezone.now())


def _player(args: Args) -> str:
    if not PLAYER_ID_RE.match(args["player_id"]):
        raise INVALID(f"{args['player_id']!r} is not a player id.")
    return str(args["player_id"])


@dataclass(frozen=True)
class LeagueRead:
    """A cohort read the fast entrance (league_fastpath.py) serves while its period is not final:
    `player` the player read (the seat looked up), else the cohort read (the seat named)."""

    player: bool


PLAYER_READ = LeagueRead(player=True)
COHORT_READ = LeagueRead(player=False)


def unknown_cohort(text: str) -> ApiError:
    return UNKNOWN_COHORT(f"No cohort {text!r} in this league.")


def league_player_call(request: Request, args: Args) -> dict[str, Any]:
    throttle_reads(request)
    league = _league(_game(args["game"]), args["league_id"])
    conf_current(league)  # the fast entrance's copy, written again when missing or older
    return player_view(league=league, player_id=_player(args), now=timezone.now())


def league_history_call(request: Request, args: Args) -> dict[str, Any]:
    throttle_reads(request)
    league = _league(_game(args["game"]), args["league_id"])
    return history_view(league=league, player_id=_player(args))


def league_cohort_call(request: Request, args: Args) -> dict[str, Any]:
    throttle_reads(request)
    league = _league(_game(args["game"]), args["league_id"])
    conf_current(league)
    ref = cohort_find(league=league, text=args["cohort_id"])
    if ref is None:
        raise unknown_cohort(args["cohort_id"])
    return cohort_view(ref, timezone.now())


OPERATION_PUT = signed(
    id="league_put",
    method="PUT",
    path="games/{game}/leagues/{league_id}",
    route="league",
    call=league_put_call,
    description=(
        "Create a league (201), send the same configuration again (200), or replace it before its first period "
        "starts (200). After that only the title may change (409 `league_started`)."
    ),
    path_params=_PATH,
    request=shapes.LeagueInSerializer,
    answer=shapes.LeagueSerializer,
    status=201,
    also={200: shapes.LeagueSerializer},
    errors=(INVALID, PARSE_ERROR, LEAGUE_STARTED),
)

LEAGUE_OPERATIONS: list[Operation] = [
    OPERATION_PUT,
    Operation(
        id="league_get",
        method="GET",
        path="games/{game}/leagues/{league_id}",
        route="league",
        call=league_get_call,
        description=(
            "A league: its configuration, the period shown (the active one, else the next, else the last) and each "
            "division with its players in a cohort and its cohorts in that period."
        ),
        path_params=_PATH,
        answer=shapes.LeagueSerializer,
        errors=(NOT_FOUND, UNKNOWN_LEAGUE),
    ),
    Operation(
        id="league_player",
        method="GET",
        path="games/{game}/leagues/{league_id}/players/{player_id}",
        route="league-player",
        call=league_player_call,
        description=(
            "The player in the period shown: their division and their whole cohort, each entry with its zone "
            "(promote, stay or demote as it stands); cohort null when the player has no result in the period."
        ),
        path_params=(*_PATH, PLAYER_PARAM),
        answer=shapes.LeaguePlayerSerializer,
        errors=(INVALID, NOT_FOUND, UNKNOWN_LEAGUE, THROTTLED, BOARDS_DOWN),
        fast=PLAYER_READ,
    ),
    Operation(
        id="league_player_history",
        method="GET",
        path="games/{game}/leagues/{league_id}/players/{player_id}/history",
        route="league-player-history",
        call=league_history_call,
        description="The player's final periods, newest first: division, cohort, rank, score and outcome.",
        path_params=(*_PATH, PLAYER_PARAM),
        answer=shapes.LeagueHistorySerializer,
        errors=(INVALID, NOT_FOUND, UNKNOWN_LEAGUE, THROTTLED),
    ),
    Operation(
        id="league_cohort",
        method="GET",
        path="games/{game}/leagues/{league_id}/cohorts/{cohort_id}",
        route="league-cohort",
        call=league_cohort_call,
        description="A cohort of any period: live while the period runs, its frozen standings once it is final.",
        path_params=(*_PATH, COHORT_PARAM),
        answer=shapes.CohortSerializer,
        errors=(NOT_FOUND, UNKNOWN_LEAGUE, UNKNOWN_COHORT, THROTTLED, BOARDS_DOWN),
        fast=COHORT_READ,
    ),
]
