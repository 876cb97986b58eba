"""A board read's parameters and errors, declared once: the path's `{board}`, the query's `region`,
`season` and `period`, `n` and `r` with their bounds, and the API errors of a board that cannot be
read (404 `unknown_board` / `unknown_season` / `not_ranked`, 400 `invalid`, 429). Both entrances
(Django's views and fastpath.py) resolve a board and name its errors through here."""

from datetime import datetime

from django.utils import timezone
from rest_framework.request import Request

from common.api_errors import BOARDS_DOWN, NOT_FOUND, THROTTLED, ApiError, Problem
from common.formats import PLAYER_ID_RE
from common.operations import INVALID, Args, Query, integer, path_param, required_integer
from seasons.catalog import Catalog
from seasons.periods import DAY, MONTH, WEEK

from . import lookups, selectors
from .kinds import BOARD_NAMES
from .throttle import THROTTLE_SPENT, reader_throttle, throttled_error

UNKNOWN_BOARD = Problem(404, "unknown_board", "no such board kind")
UNKNOWN_SEASON = Problem(404, "unknown_season", "no such season in this game")
NOT_RANKED = Problem(404, "not_ranked", "the player has no visible score on this board and period")

BOARD_PARAM = path_param(
    "board",
    {"type": "string", "enum": list(BOARD_NAMES)},
    "`all` (season points), `daily`, `weekly`, `monthly` (points in the period), `best` (best single match).",
)
REGION = Query(
    "region",
    "`global` (default), a region (`eu`) or a dimension's board (`country-de`).",
    {"type": "string", "pattern": selectors.REGION_PATTERN},
)
SEASON = Query("season", "Season id (default: the current season).", {"type": "integer", "minimum": 1})
PERIOD = Query(
    "period",
    "The period of a periodic board: `daily` a day (`2026-10-13`), `weekly` an ISO week (`2026-W42`), "
    "`monthly` a month (`2026-10`); default: the current one. A period on `all` or `best`, or in another "
    "board's format, is a 400 `invalid`.",
    {"anyOf": [DAY.schema(), WEEK.schema(), MONTH.schema()]},
)
BOARD_QUERY = (REGION, SEASON, PERIOD)
N = integer("n", low=1, high=1000, default=100, description="How many entries: 1 to 1,000 (default 100).")
R = integer("r", low=0, high=50, default=5, description="Entries on each side of the player: 0 to 50 (default 5).")
MAX_IDS = 100
MAX_SCORE = 2**53 - 1  # the largest integer a JSON number (a double) holds exactly


def player_ids(raw: str) -> list[str]:
    """`ids` of the players read: 1 to MAX_IDS distinct player ids, comma-separated, else 400."""
    ids = raw.split(",")
    if not 1 <= len(ids) <= MAX_IDS:
        raise INVALID(f"ids: 1 to {MAX_IDS} player ids, comma-separated.")
    malformed = next((i for i in ids if not PLAYER_ID_RE.fullmatch(i)), None)
    if malformed is not None:
        raise INVALID(f"ids: {malformed[:64]!r} is not a player id (1 to 64 characters from [A-Za-z0-9_.:-]).")
    if len(set(ids)) != len(ids):
        raise INVALID("ids: each player id at most once.")
    return ids


_ID = PLAYER_ID_RE.pattern.strip("^$")
IDS = Query(
    "ids",
    f"1 to {MAX_IDS} distinct player ids, comma-separated (`maya,leo`).",
    {"type": "string", "pattern": f"^{_ID}(,{_ID}){{0,{MAX_IDS - 1}}}$"},
    required=True,
    parse=player_ids,
    example="maya,leo",
)
SCORE = required_integer(
    "score", low=0, high=MAX_SCORE, example=1200, description=f"A score: an integer from 0 to {MAX_SCORE}."
)
BOARD_ERRORS = (INVALID, NOT_FOUND, UNKNOWN_BOARD, UNKNOWN_SEASON, THROTTLED, BOARDS_DOWN)


def view_error(error: LookupError | ValueError, *, game: str, board: str) -> ApiError:
    """The API's answer to a board that cannot be resolved (selectors.board_resolve's errors)."""
    if isinstance(error, selectors.UnknownGame):
        return NOT_FOUND(f"No game {game!r}.")
    if isinstance(error, selectors.UnknownBoard):
        return UNKNOWN_BOARD(f"No board {board!r}; boards: {', '.join(BOARD_NAMES)}.")
    if isinstance(error, selectors.UnknownSeason):
        return UNKNOWN_SEASON(f"No season {error} for this game.")
    assert isinstance(error, selectors.BadQuery)
    return INVALID(f"{error.field}: {error.message}")


def not_ranked(player_id: str) -> ApiError:
    return NOT_RANKED(f"{player_id!r} has no score on this board and period.")


def not_ranked_anywhere(player_id: str) -> ApiError:
    return NOT_RANKED(f"{player_id!r} has no score on any board of the current season and periods.")


def current_boards(catalog: Catalog, args: Args, now: datetime) -> list[selectors.BoardView]:
    """Every board kind of the game's current season and periods (the player's boards read), in
    `args`' region, or the API's 400/404; both entrances resolve them here."""
    try:
        return lookups.current_boards(catalog=catalog, region=args.get("region"), now=now)
    except (selectors.UnknownBoard, selectors.UnknownSeason, selectors.BadQuery) as exc:
        raise view_error(exc, game=args["game"], board="") from exc


def throttle_reads(request: Request) -> None:
    scope = getattr(request._request, "scope", None)
    if scope is not None and scope.get(THROTTLE_SPENT):
        return  # the fast path spent this read's token already (fastpath.py)
    retry_after = reader_throttle(address=request.META.get("REMOTE_ADDR", ""), now=timezone.now())
    if retry_after is not None:
        raise throttled_error(retry_after)


def resolve(
    request: Request, args: Args, *, board: str | None = None, now: datetime | None = None
) -> selectors.BoardView:
    """The board a reader means (game, board, season, region, period), or the API's 400/404.
    `board`: when the board is named elsewhere than the path (a signed read's query)."""
    throttle_reads(request)
    name = board if board is not None else args["board"]
    try:
        return selectors.board_view(
            slug=args["game"],
            board=name,
            region=args.get("region"),
            season=args.get("season"),
            period=args.get("period"),
            now=now or timezone.now(),
        )
    except (selectors.UnknownGame, selectors.UnknownBoard, selectors.UnknownSeason, selectors.BadQuery) as exc:
        raise view_error(exc, game=args["game"], board=name) from exc
