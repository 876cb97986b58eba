"""Public read endpoints (no signature). Thin: parse the query, one selector call."""

from datetime import UTC, datetime
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from anticheat.services import reader_throttle
from anticheat.signed import SIGNATURE_HEADERS, signed_key
from leaderboard_site.api_errors import ApiError
from scoring.apis import verified_json
from scoring.serializers import ErrorSerializer
from scoring.validation import PLAYER_ID_RE
from seasons.models import Game
from seasons.selectors import game_catalog, game_get, season_current, seasons_of

from . import selectors, serializers
from .models import Player, SeasonRegion
from .services import friends_of, friendship_add, friendship_remove, player_delete, player_update

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


def throttle_reads(request: Request) -> None:
    retry_after = reader_throttle(address=request.META.get("REMOTE_ADDR", ""), now=timezone.now())
    if retry_after is not None:
        raise ApiError(
            429,
            "throttled",
            f"Too many reads from this address; retry in {retry_after} s.",
            headers={"Retry-After": str(retry_after)},
        )


def resolve(request: Request, game: str, board: str) -> selectors.BoardView:
    throttle_reads(request)
    catalog = game_catalog(slug=game)
    if catalog.game is None:
        raise ApiError(404, "not_found", f"No game {game!r}.")
    try:
        return selectors.board_resolve(
            game=catalog.game,
            seasons=catalog.seasons,
            pointer_id=catalog.pointer_id,
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
                "percentile_error": standing.percentile_error,
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
        throttle_reads(request)
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
        throttle_reads(request)
        game_obj = game_or_404(game)
        now = timezone.now()
        seasons = seasons_of(game=game_obj)
        current = season_current(game=game_obj, now=now, seasons=seasons)
        return Response({"current": current.id if current else None, "seasons": [season_row(s, now) for s in seasons]})


class BoardFriendsApi(APIView):
    @extend_schema(
        operation_id="board_friends",
        parameters=BOARD_PARAMS,
        responses={200: serializers.FriendsSerializer, **ERRORS},
        description=(
            "The player and their confirmed friends (stored by the service, at most 500) with a score on "
            "the board: `rank` among themselves by the tie rule, `board_rank` on the whole board."
        ),
    )
    def get(self, request: Request, game: str, board: str, player_id: str) -> Response:
        view = resolve(request, game, board)
        friends = friends_of(game=view.game, player_id=player_id)
        return Response({"entries": selectors.board_friends(view=view, player_id=player_id, friends=friends)})


def _player_or_404(game: Game, player_id: str) -> None:
    if not PLAYER_ID_RE.match(player_id):
        raise ApiError(404, "not_found", "No such player.")


class PlayerApi(APIView):
    """Signed (match servers or the studio's backend): a player's profile and account."""

    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="player_update",
        parameters=SIGNATURE_HEADERS,
        request=serializers.PlayerPatchSerializer,
        responses={200: serializers.PlayerSerializer, 400: ErrorSerializer, 401: ErrorSerializer, 404: ErrorSerializer},
        description="Set `display_name` and/or `hidden`. A hidden player leaves every public answer at once.",
    )
    def patch(self, request: Request, game: str, player_id: str) -> Response:
        key, data = verified_json(request, game)
        _player_or_404(key.game, player_id)
        if not isinstance(data, dict) or not data.keys() & {"display_name", "hidden"}:
            raise ApiError(400, "invalid", "Send display_name and/or hidden.")
        errors: dict[str, list[str]] = {}
        name = data.get("display_name")
        if "display_name" in data and (not isinstance(name, str) or not 1 <= len(name.strip()) <= 100):
            errors["display_name"] = ["A display name is a string of 1-100 characters."]
        hidden = data.get("hidden")
        if "hidden" in data and not isinstance(hidden, bool):
            errors["hidden"] = ["hidden must be true or false."]
        if errors:
            raise ValidationError(errors)
        try:
            player = player_update(
                game=key.game,
                player_id=player_id,
                display_name=name.strip() if isinstance(name, str) else None,
                hidden=hidden if isinstance(hidden, bool) else None,
            )
        except Player.DoesNotExist as exc:
            raise ApiError(404, "not_found", "This account was deleted.") from exc
        return Response({"player_id": player.player_id, "display_name": player.display_name, "hidden": player.hidden})

    @extend_schema(
        operation_id="player_delete",
        parameters=SIGNATURE_HEADERS,
        request=None,
        responses={204: None, 401: ErrorSerializer, 404: ErrorSerializer},
        description="Account deletion: off every live board at once, ledger rows pseudonymised, never shown again.",
    )
    def delete(self, request: Request, game: str, player_id: str) -> Response:
        key = signed_key(request, game)
        _player_or_404(key.game, player_id)
        player_delete(game=key.game, player_id=player_id)
        return Response(status=204)


class PlayerRankApi(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="player_rank",
        parameters=[*SIGNATURE_HEADERS, OpenApiParameter("board", str, description="Default `all`."), *BOARD_PARAMS],
        responses={200: serializers.OwnRankSerializer, 401: ErrorSerializer, 404: ErrorSerializer},
        description="The player's own score and rank, also when hidden (counted as if visible).",
    )
    def get(self, request: Request, game: str, player_id: str) -> Response:
        key = signed_key(request, game)
        view = resolve(request, game, request.query_params.get("board") or "all")
        found = selectors.board_own_rank(view=view, player_id=player_id)
        if found is None:
            raise not_ranked(player_id)
        hidden = Player.objects.filter(game=key.game, player_id=player_id, hidden=True).exists()
        return Response({"player_id": player_id, "score": found[0], "rank": found[1], "hidden": hidden})


class FriendshipApi(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="friendship_add",
        parameters=SIGNATURE_HEADERS,
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
        parameters=SIGNATURE_HEADERS,
        request=None,
        responses={204: None, 401: ErrorSerializer},
        description="Ends a friendship (idempotent).",
    )
    def delete(self, request: Request, game: str, player_id: str, friend_id: str) -> Response:
        key = signed_key(request, game)
        friendship_remove(game=key.game, player_id=player_id, friend_id=friend_id)
        return Response(status=204)


class BoardDistributionApi(APIView):
    @extend_schema(
        operation_id="board_distribution",
        parameters=BOARD_PARAMS,
        responses={200: serializers.DistributionSerializer, **ERRORS},
        description=(
            "The score histogram used for percentiles and the page's chart: equi-depth buckets (up to 20), "
            "bounds inclusive, ascending and disjoint; recomputed at least once a minute."
        ),
    )
    def get(self, request: Request, game: str, board: str) -> Response:
        view = resolve(request, game, board)
        return Response(selectors.board_distribution(view=view))
