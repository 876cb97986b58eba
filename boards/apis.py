"""Public read endpoints (no signature). Thin: parse the query, one selector call, a serializer."""

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.api_errors import ApiError, ErrorSerializer
from common.openapi import GAME_PARAM, PLAYER_PARAM

from . import selectors, serializers
from .params import BOARD_PARAMS, N_PARAM, R_PARAM, int_param, not_ranked, resolve, throttle_reads

ERRORS = {400: ErrorSerializer, 404: ErrorSerializer, 429: ErrorSerializer, 503: ErrorSerializer}


class BoardTopApi(APIView):
    @extend_schema(
        operation_id="board_top",
        parameters=[N_PARAM, *BOARD_PARAMS],
        responses={200: serializers.TopSerializer, **ERRORS},
        description=(
            "The top n, highest first, ranked by the game's tie rule: the board as it is now (a copy is "
            "served only while the board's version in Redis has not moved)."
        ),
    )
    def get(self, request: Request, game: str, board: str) -> Response:
        n = int_param(request, "n", 100, 1, 1000)
        view = resolve(request, game, board)
        entries = selectors.board_top(view=view, n=n)
        return Response(serializers.TopSerializer({"view": view, "entries": entries}).data)


class BoardPlayerApi(APIView):
    @extend_schema(
        operation_id="board_player",
        parameters=[PLAYER_PARAM, *BOARD_PARAMS],
        responses={200: serializers.PlayerStandingSerializer, **ERRORS},
        description="A player's score, rank, the board's total and percentile; 404 `not_ranked`.",
    )
    def get(self, request: Request, game: str, board: str, player_id: str) -> Response:
        view = resolve(request, game, board)
        standing = selectors.board_player(view=view, player_id=player_id)
        if standing is None:
            raise not_ranked(player_id)
        return Response(serializers.PlayerStandingSerializer(standing).data)


class BoardAroundApi(APIView):
    @extend_schema(
        operation_id="board_around",
        parameters=[PLAYER_PARAM, R_PARAM, *BOARD_PARAMS],
        responses={200: serializers.AroundSerializer, **ERRORS},
        description="The 2r+1 entries around the player; near either end the window slides.",
    )
    def get(self, request: Request, game: str, board: str, player_id: str) -> Response:
        r = int_param(request, "r", 5, 0, 50)
        view = resolve(request, game, board)
        entries = selectors.board_around(view=view, player_id=player_id, r=r)
        if entries is None:
            raise not_ranked(player_id)
        return Response(serializers.AroundSerializer({"entries": entries}).data)


class BoardFriendsApi(APIView):
    @extend_schema(
        operation_id="board_friends",
        parameters=[PLAYER_PARAM, *BOARD_PARAMS],
        responses={200: serializers.FriendsSerializer, **ERRORS},
        description=(
            "The player and their confirmed friends (stored by the service, at most 500) with a score on "
            "the board: `rank` among themselves by the tie rule, `board_rank` on the whole board."
        ),
    )
    def get(self, request: Request, game: str, board: str, player_id: str) -> Response:
        view = resolve(request, game, board)
        entries = selectors.board_friends(view=view, player_id=player_id)
        return Response(serializers.FriendsSerializer({"entries": entries}).data)


class BoardDistributionApi(APIView):
    @extend_schema(
        operation_id="board_distribution",
        parameters=BOARD_PARAMS,
        responses={200: serializers.DistributionSerializer, **ERRORS},
        description=(
            "The score histogram used for percentiles and the page's chart: equi-depth buckets (up to 100), "
            "bounds inclusive, ascending and disjoint; recomputed at least once a minute."
        ),
    )
    def get(self, request: Request, game: str, board: str) -> Response:
        view = resolve(request, game, board)
        return Response(serializers.DistributionSerializer(selectors.board_distribution(view=view)).data)


class GameDetailApi(APIView):
    @extend_schema(
        operation_id="game_detail",
        parameters=[GAME_PARAM],
        responses={200: serializers.GameSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request, game: str) -> Response:
        throttle_reads(request)
        detail = selectors.game_detail(slug=game, now=timezone.now())
        if detail is None:
            raise ApiError(404, "not_found", f"No game {game!r}.")
        return Response(serializers.GameSerializer(detail).data)


class GameSeasonsApi(APIView):
    @extend_schema(
        operation_id="game_seasons",
        parameters=[GAME_PARAM],
        responses={200: serializers.SeasonsSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request, game: str) -> Response:
        throttle_reads(request)
        now = timezone.now()
        listing = selectors.game_seasons(slug=game, now=now)
        if listing is None:
            raise ApiError(404, "not_found", f"No game {game!r}.")
        return Response(serializers.SeasonsSerializer(listing).data)
