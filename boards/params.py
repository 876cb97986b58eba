"""A read's query, parsed at the HTTP edge: the board it means and the API's errors for a bad one
(400 `invalid`, 404 `not_found` / `unknown_board` / `unknown_season` / `not_ranked`, 429)."""

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

from common.api_errors import ApiError
from common.openapi import GAME_PARAM

from . import selectors
from .kinds import BOARD_NAMES
from .throttle import THROTTLE_SPENT, reader_throttle

BOARD_PARAMS = [
    GAME_PARAM,
    OpenApiParameter(
        "region",
        {"type": "string", "pattern": r"^(global|[a-z0-9-]{2,40})$"},
        description="`global` (default), a region (`eu`) or a dimension's board (`country-de`).",
    ),
    OpenApiParameter(
        "season", {"type": "integer", "minimum": 1}, description="Season id (default: the current season)."
    ),
    OpenApiParameter(
        "period",
        str,
        description="`daily`: `2026-10-13`; `weekly`: `2026-W42` (ISO week); `monthly`: `2026-10`. Default: current.",
    ),
]
N_PARAM = OpenApiParameter(
    "n", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}, description="1 to 1,000 (default 100)."
)
R_PARAM = OpenApiParameter(
    "r", {"type": "integer", "minimum": 0, "maximum": 50, "default": 5}, description="0 to 50 (default 5)."
)


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ApiError(400, "invalid", f"{name} must be an integer from {low} to {high}.")
    return int(raw)


def throttle_reads(request: Request) -> None:
    scope = getattr(request._request, "scope", None)
    if scope is not None and scope.get(THROTTLE_SPENT):
        return  # the fast path spent this read's token already (fastpath.py)
    retry_after = reader_throttle(address=request.META.get("REMOTE_ADDR", ""), now=timezone.now())
    if retry_after is not None:
        raise ApiError(
            429,
            "throttled",
            f"Too many reads from this address; retry in {retry_after} s.",
            headers={"Retry-After": str(retry_after)},
        )


def resolve(request: Request, game: str, board: str) -> selectors.BoardView:
    """The board a reader means (game, board, season, region, period), or the API's 400/404."""
    throttle_reads(request)
    try:
        return selectors.board_view(
            slug=game,
            board=board,
            region=request.query_params.get("region"),
            season=request.query_params.get("season"),
            period=request.query_params.get("period"),
            now=timezone.now(),
        )
    except selectors.UnknownGame as exc:
        raise ApiError(404, "not_found", f"No game {game!r}.") from exc
    except selectors.UnknownBoard as exc:
        raise ApiError(404, "unknown_board", f"No board {board!r}; boards: {', '.join(BOARD_NAMES)}.") from exc
    except selectors.UnknownSeason as exc:
        raise ApiError(404, "unknown_season", f"No season {exc} for this game.") from exc
    except selectors.BadQuery as exc:
        raise ApiError(400, "invalid", f"{exc.field}: {exc.message}") from exc


def not_ranked(player_id: str) -> ApiError:
    return ApiError(404, "not_ranked", f"{player_id!r} has no score on this board and period.")
