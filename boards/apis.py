"""Public read endpoints (no signature). Thin: parse the query, one selector call."""

from datetime import UTC, datetime
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard_site.api_errors import ApiError
from scoring.serializers import ErrorSerializer
from seasons.models import Game
from seasons.selectors import game_catalog, game_get, season_current, seasons_of

from . import selectors, serializers
from .models import SeasonRegion

BOARD_PARAMS = [
    OpenApiParameter("region", str, description="`global` (default) or a region, e.g. `eu`."),
    OpenApiParameter("season", int, description="Season id (default: the current season)."),
    OpenApiParameter(
        "period",
        str,
        description="`daily`: `2026-10-13`; `weekly`: `2026-W42` (ISO week); `monthly`: `2026-10`. Default: current.",
    ),
]
ERRORS = {400: ErrorSerializer, 404: ErrorSerializer, 503: ErrorSerializer}


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def game_or_404(slug: str) -> Game:
    game = game_get(slug=slug)
    if game is None:
        raise ApiError(404, "not_found", f"No game {slug!r}.")
    return game


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ApiError(400, "invalid", f"{name} must be an integer from {low} to {high}.")
    return int(raw)


def resolve(request: Request, game: str, board: str) -> selectors.BoardView:
    game_obj, seasons = game_catalog(slug=game)
    if game_obj is None:
        raise ApiError(404, "not_found", f"No game {game!r}.")
    try:
        return selectors.board_resolve(
            game=game_obj,
            seasons=seasons,
            board=board,
            region=request.query_params.get("region"),
            season=request.query_params.get("season"),
            period=request.query_params.get("period"),
            now=timezone.now(),
        )
    except selectors.UnknownBoard as exc:
        raise ApiError(404, "unknown_board", f"No board {board!r}; boards: {', '.join(selectors.BOARDS)}.") from exc
    except selectors.UnknownSeason as exc:
        raise ApiError(404, "unknown_season", f"No season {exc} for this game.") from exc
    except selectors.BadQuery as exc:
        raise ApiError(400, "invalid", f"{exc.field}: {exc.message}") from exc


def not_ranked(player_id: str) -> ApiError:
    return ApiError(404, "not_ranked", f"{player_id!r} has no score on this board and period.")


class BoardTopApi(APIView):
    @extend_schema(
        operation_id="board_top",
        parameters=[OpenApiParameter("n", int, description="1 to 1,000 (default 100)."), *BOARD_PARAMS],
        responses={200: serializers.TopSerializer, **ERRORS},
        description="The top n, highest first, ranked by the game's tie rule; cached for 1 s.",
    )
    def get(self, request: Request, game: str, board: str) -> Response:
        n = int_param(request, "n", 100, 1, 1000)
        view = resolve(request, game, board)
        entries = selectors.board_top(view=view, n=n)
        return Response(
            {
                "board": view.board,
                "season": view.season.id,
                "period": view.period,
                "region": view.region,
                "tie_rule": view.game.tie_rule,
                "entries": entries,
            }
        )


class BoardPlayerApi(APIView):
    @extend_schema(
        operation_id="board_player",
        parameters=BOARD_PARAMS,
        responses={200: serializers.PlayerStandingSerializer, **ERRORS},
        description="A player's score, rank, the board's total and percentile; 404 `not_ranked`.",
    )
    def get(self, request: Request, game: str, board: str, player_id: str) -> Response:
        view = resolve(request, game, board)
        standing = selectors.board_player(view=view, player_id=player_id)
        if standing is None:
            raise not_ranked(player_id)
        return Response(
            {
                "player_id": standing.player_id,
                "display_name": standing.display_name,
                "score": standing.score,
                "rank": standing.rank,
                "total": standing.total,
                "percentile": standing.percentile,
                "percentile_error": 0.0,
            }
        )


class BoardAroundApi(APIView):
    @extend_schema(
        operation_id="board_around",
        parameters=[OpenApiParameter("r", int, description="0 to 50 (default 5)."), *BOARD_PARAMS],
        responses={200: serializers.AroundSerializer, **ERRORS},
        description="The 2r+1 entries around the player; near either end the window slides.",
    )
    def get(self, request: Request, game: str, board: str, player_id: str) -> Response:
        r = int_param(request, "r", 5, 0, 50)
        view = resolve(request, game, board)
        entries = selectors.board_around(view=view, player_id=player_id, r=r)
        if entries is None:
            raise not_ranked(player_id)
        return Response({"entries": entries})


def season_row(season, now: datetime) -> dict[str, Any]:
    return {
        "id": season.id,
        "name": season.name,
        "starts_at": iso(season.starts_at),
        "ends_at": iso(season.ends_at),
        "grace_s": season.grace_s,
        "status": season.status_at(now),
    }


class GameDetailApi(APIView):
    @extend_schema(operation_id="game_detail", responses={200: serializers.GameSerializer, 404: ErrorSerializer})
    def get(self, request: Request, game: str) -> Response:
        game_obj = game_or_404(game)
        current = season_current(game=game_obj, now=timezone.now())
        regions = ["global"]
        if current is not None:
            regions += sorted(SeasonRegion.objects.filter(season=current).values_list("region", flat=True).distinct())
        return Response(
            {
                "game": game_obj.slug,
                "name": game_obj.name,
                "tie_rule": game_obj.tie_rule,
                "boards": list(selectors.BOARDS),
                "regions": regions,
                "current_season": current.id if current else None,
            }
        )


class GameSeasonsApi(APIView):
    @extend_schema(operation_id="game_seasons", responses={200: serializers.SeasonsSerializer, 404: ErrorSerializer})
    def get(self, request: Request, game: str) -> Response:
        game_obj = game_or_404(game)
        now = timezone.now()
        seasons = seasons_of(game=game_obj)
        current = season_current(game=game_obj, now=now, seasons=seasons)
        return Response({"current": current.id if current else None, "seasons": [season_row(s, now) for s in seasons]})
