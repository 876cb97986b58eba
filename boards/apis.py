"""The public reads (no signature), each declared once (common/operations.py): its route, its
parameters, the selector it calls, its answer's shape and its errors. urls.py builds Django's
views from `OPERATIONS`, drf-spectacular the OpenAPI document, and fastpath.py answers the board
reads that carry a `ScriptRead` without Django.

To add a read of a board: write its selector (selectors.py: the sync function, and its Lua
script's call and parse when one script answers it), then declare it here with `board_read`;
urls.py and the fast entrance pick it up. boards/tests/test_fastpath.py holds the two entrances
to the same bytes for every declared fast read.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework.request import Request

from common.api_errors import BOARDS_DOWN, NOT_FOUND, THROTTLED
from common.openapi import GAME_PARAM, PLAYER_PARAM
from common.operations import INVALID, Args, Operation, Query
from seasons.catalog import Catalog, catalog_get

from . import keys, lookups, selectors, serializers
from .keys import GLOBAL
from .params import (
    BOARD_ERRORS,
    BOARD_PARAM,
    BOARD_QUERY,
    IDS,
    NOT_RANKED,
    REGION,
    SCORE,
    UNKNOWN_SEASON,
    N,
    R,
    current_boards,
    not_ranked,
    not_ranked_anywhere,
    resolve,
    throttle_reads,
)
from .selectors import BoardView, Call, VersionedCache


@dataclass(frozen=True)
class ScriptRead:
    """A read that one Lua script answers on a live board of one sorted set (the fast entrance's
    way; the sync selectors run the same calls). `call(view, args, held_version)` gives the
    script's KEYS and ARGV; `parse(view, args, reply)` the selector's value (None: not ranked), or
    for a cached read (version, value or None when the held copy is current).

    A cached read keeps answers in `cache` under `cache_key`, at the board's version. On a board
    split by player (board_shards > 1) a held answer is served while `split_versions` (the keys
    whose values make its version) are unchanged; Django reads the shards otherwise."""

    script: str
    call: Callable[[BoardView, Args, str], Call]
    parse: Callable[[BoardView, Args, list[Any]], Any]
    cache: VersionedCache | None = None
    cache_key: Callable[[BoardView, Args], Any] | None = None
    split_versions: Callable[[BoardView], list[str]] | None = None
    counts_total: bool = False  # its reply lacks the board's total: `percent` tiers need one more call (Django)


@dataclass(frozen=True)
class BoardRead:
    """How a board read is answered: `select(view, args)` is the selector (every board: live,
    frozen, split, on a cluster), None when the player is not ranked (404 `not_ranked`);
    `present(view, args, value)` is what the answer's serializer renders; `script` is the fast
    entrance's one-script form (None: Django only)."""

    select: Callable[[BoardView, Args], Any]
    present: Callable[[BoardView, Args, Any], Any] = lambda view, args, value: value
    script: ScriptRead | None = None
    missing: bool = False  # whether `select` may answer None (declares 404 `not_ranked`)


def board_read(
    *,
    id: str,
    route: str,
    tail: str,
    read: BoardRead,
    answer: type[Any],
    description: str,
    query: tuple[Query, ...] = (),
) -> Operation:
    """A GET of one board: `/games/{game}/boards/{board}/<tail>` with the board's query parameters."""

    def call(request: Request, args: Args) -> Any:
        view = resolve(request, args)
        value = read.select(view, args)
        if value is None:
            raise not_ranked(args["player_id"])
        return read.present(view, args, value)

    path_params = (GAME_PARAM, BOARD_PARAM, *((PLAYER_PARAM,) if "{player_id}" in tail else ()))
    errors = BOARD_ERRORS + ((NOT_RANKED,) if read.missing else ())
    return Operation(
        id=id,
        method="GET",
        path=f"games/{{game}}/boards/{{board}}/{tail}",
        route=route,
        call=call,
        description=description,
        path_params=path_params,
        query=(*query, *BOARD_QUERY),
        answer=answer,
        errors=errors,
        fast=read,
    )


def _entries(view: BoardView, args: Args, entries: Any) -> dict[str, Any]:
    return {"entries": entries}


def _shard_versions(view: BoardView) -> list[str]:
    return [part.version_key for part in view.ref.shards(view.season.board_shards)]


TOP = BoardRead(
    select=lambda view, args: selectors.board_top(view=view, n=args["n"]),
    present=lambda view, args, entries: {"view": view, "entries": entries},
    script=ScriptRead(
        selectors.TOP_SCRIPT,
        call=lambda view, args, held: selectors.top_call(view, args["n"], held),
        parse=lambda view, args, reply: selectors.top_parse(view, reply),
        cache=selectors.top_cache,
        cache_key=lambda view, args: selectors.top_key(view, args["n"]),
        split_versions=lambda view: [*_shard_versions(view), keys.names_version_key(view.game.slug)],
    ),
)


def _tiered(fields: tuple[str, ...]) -> Callable[[BoardView, Args, Any], Any]:
    """A `present` for an answer of one rank and score (the player read, the rank of a score): the
    value itself, or on a board with tiers its `fields` and the `tier` of its rank and score."""

    def present(view: BoardView, args: Args, value: Any) -> Any:
        tiers = view.tiers
        if tiers is None:
            return value
        answer = {name: getattr(value, name) for name in fields}
        answer["tier"] = tiers.of(score=value.score, rank=value.rank, total=value.total)
        return answer

    return present


PLAYER = BoardRead(
    select=lambda view, args: selectors.board_player(view=view, player_id=args["player_id"]),
    present=_tiered(("player_id", "display_name", "score", "rank", "total", "percentile", "percentile_error")),
    script=ScriptRead(
        selectors.PLAYER_SCRIPT,
        call=lambda view, args, held: selectors.player_call(view, args["player_id"]),
        parse=lambda view, args, reply: selectors.player_parse(view, args["player_id"], reply),
    ),
    missing=True,
)
AROUND = BoardRead(
    select=lambda view, args: selectors.board_around(view=view, player_id=args["player_id"], r=args["r"]),
    present=_entries,
    script=ScriptRead(
        selectors.AROUND_SCRIPT,
        call=lambda view, args, held: selectors.around_call(view, args["player_id"], args["r"]),
        parse=lambda view, args, reply: selectors.around_parse(view, reply),
    ),
    missing=True,
)
FRIENDS = BoardRead(
    select=lambda view, args: selectors.board_friends(view=view, player_id=args["player_id"]),
    present=_entries,
    script=ScriptRead(
        selectors.FRIENDS_SCRIPT,
        call=lambda view, args, held: selectors.friends_call(view, args["player_id"]),
        parse=lambda view, args, reply: selectors.friends_parse(view, reply),
        counts_total=True,
    ),
)
DISTRIBUTION = BoardRead(
    select=lambda view, args: selectors.board_distribution(view=view),
    script=ScriptRead(
        selectors.DISTRIBUTION_SCRIPT,
        call=lambda view, args, held: selectors.distribution_call(view, held),
        parse=lambda view, args, reply: selectors.distribution_parse(view, reply),
        cache=selectors.distribution_cache,
        cache_key=lambda view, args: view.ref.key,
        split_versions=_shard_versions,
    ),
)


PLAYERS = BoardRead(
    select=lambda view, args: lookups.board_players(view=view, ids=args["ids"]),
    script=ScriptRead(
        lookups.PLAYERS_SCRIPT,
        call=lambda view, args, held: lookups.players_call(view, args["ids"]),
        parse=lambda view, args, reply: lookups.players_parse(view, args["ids"], reply),
        counts_total=True,
    ),
)


SCORE_RANK = BoardRead(
    select=lambda view, args: lookups.board_score_rank(view=view, score=args["score"]),
    present=_tiered(("score", "rank", "total", "percentile", "percentile_error")),
    script=ScriptRead(
        lookups.SCORE_RANK_SCRIPT,
        call=lambda view, args, held: lookups.score_rank_call(view, args["score"]),
        parse=lambda view, args, reply: lookups.score_rank_parse(view, args["score"], reply),
    ),
)


@dataclass(frozen=True)
class BoardsRead:
    """A read of one player over every board kind of the game's current season and periods
    (params.current_boards resolves them): `select(views, args)` answers it on any boards (live,
    frozen, split, on a cluster), None when the player is on none (404 `not_ranked`); `script`,
    `call(views, args)` and `parse(views, args, reply)` are the fast entrance's one-script form
    of it, on boards of one set."""

    select: Callable[[list[BoardView], Args], Any]
    script: str
    call: Callable[[list[BoardView], Args], Call]
    parse: Callable[[list[BoardView], Args, list[Any]], Any]


PLAYER_BOARDS = BoardsRead(
    select=lambda views, args: lookups.player_boards(views=views, player_id=args["player_id"]),
    script=lookups.PLAYER_BOARDS_SCRIPT,
    call=lambda views, args: lookups.player_boards_call(views, args["player_id"]),
    parse=lambda views, args, reply: lookups.player_boards_parse(views, args["player_id"], reply),
)


def player_read(*, id: str, route: str, tail: str, read: BoardsRead, answer: type[Any], description: str) -> Operation:
    """A GET of a player over the game's boards: `/games/{game}/players/{player_id}/<tail>`, with
    `region`; 404 `not_ranked` when the player is on none of them."""

    def call(request: Request, args: Args) -> Any:
        throttle_reads(request)
        catalog = catalog_get(slug=args["game"])
        if catalog.game is None:
            raise NOT_FOUND(f"No game {args['game']!r}.")
        value = read.select(current_boards(catalog, args, timezone.now()), args)
        if value is None:
            raise not_ranked_anywhere(args["player_id"])
        return value

    return Operation(
        id=id,
        method="GET",
        path=f"games/{{game}}/players/{{player_id}}/{tail}",
        route=route,
        call=call,
        description=description,
        path_params=(GAME_PARAM, PLAYER_PARAM),
        query=(REGION,),
        answer=answer,
        errors=(INVALID, NOT_FOUND, UNKNOWN_SEASON, NOT_RANKED, THROTTLED, BOARDS_DOWN),
        fast=read,
    )


@dataclass(frozen=True)
class CatalogRead:
    """A read of a game as its catalog has it: `answer(catalog, now, regions)`, with the regions
    of its current season when `regions` (else just `global`). Django's view reads the catalog and
    the regions set one after the other; the fast entrance in one call (fastpath.py)."""

    answer: Callable[[Catalog, datetime, list[str]], Any]
    regions: bool = False


def game_read(*, id: str, route: str, tail: str, read: CatalogRead, answer: type[Any], description: str) -> Operation:
    """A GET of a game (no board): `/games/{game}<tail>`; 404 `not_found` when there is no such game."""

    def call(request: Request, args: Args) -> Any:
        throttle_reads(request)
        catalog = catalog_get(slug=args["game"])
        if catalog.game is None:
            raise NOT_FOUND(f"No game {args['game']!r}.")
        now = timezone.now()
        regions = selectors.game_regions(season=selectors.catalog_current(catalog, now)) if read.regions else [GLOBAL]
        return read.answer(catalog, now, regions)

    return Operation(
        id=id,
        method="GET",
        path=f"games/{{game}}{tail}",
        route=route,
        call=call,
        description=description,
        path_params=(GAME_PARAM,),
        answer=answer,
        errors=(NOT_FOUND, THROTTLED, BOARDS_DOWN),
        fast=read,
    )


GAME = CatalogRead(
    answer=lambda catalog, now, regions: selectors.game_detail_of(catalog=catalog, now=now, regions=regions),
    regions=True,
)
SEASONS = CatalogRead(answer=lambda catalog, now, regions: selectors.game_seasons_of(catalog=catalog, now=now))


OPERATIONS: list[Operation] = [
    game_read(
        id="game_detail",
        route="game-detail",
        tail="",
        read=GAME,
        answer=serializers.GameSerializer,
        description="The game: its name, tie rule, board kinds, the regions of its current season and that season.",
    ),
    game_read(
        id="game_seasons",
        route="game-seasons",
        tail="/seasons",
        read=SEASONS,
        answer=serializers.SeasonsSerializer,
        description="The game's seasons, newest first, each with its status now, and the current one.",
    ),
    board_read(
        id="board_top",
        route="board-top",
        tail="top",
        read=TOP,
        answer=serializers.TopSerializer,
        query=(N,),
        description=(
            "The top n, highest first, ranked by the game's tie rule: the board as it is now (a copy is "
            "served only while the board's version in Redis has not moved)."
        ),
    ),
    board_read(
        id="board_distribution",
        route="board-distribution",
        tail="distribution",
        read=DISTRIBUTION,
        answer=serializers.DistributionSerializer,
        description=(
            "The score histogram used for percentiles and the page's chart: equi-depth buckets (up to 100), "
            "bounds inclusive, ascending and disjoint; recomputed at least once a minute."
        ),
    ),
    board_read(
        id="board_player",
        route="board-player",
        tail="players/{player_id}",
        read=PLAYER,
        answer=serializers.PlayerStandingSerializer,
        description="A player's score, rank, the board's total and percentile; 404 `not_ranked`.",
    ),
    board_read(
        id="board_friends",
        route="board-friends",
        tail="players/{player_id}/friends",
        read=FRIENDS,
        answer=serializers.FriendsSerializer,
        description=(
            "The player and their confirmed friends (stored by the service, at most 500) with a score on "
            "the board: `rank` among themselves by the tie rule, `board_rank` on the whole board."
        ),
    ),
    board_read(
        id="board_players",
        route="board-players",
        tail="players",
        read=PLAYERS,
        answer=serializers.PlayersSerializer,
        query=(IDS,),
        description=(
            "Several players at once: the entries of those with a visible score, as `top` gives them, best "
            "rank first, and the ids without one (`missing`: hidden, deleted or not on the board), in the "
            "order asked. 1 to 100 distinct ids; a repeated or malformed id is a 400 `invalid`."
        ),
    ),
    board_read(
        id="board_score_rank",
        route="board-score-rank",
        tail="rank",
        read=SCORE_RANK,
        answer=serializers.ScoreRankSerializer,
        query=(SCORE,),
        description=(
            "The rank a player with this score would have now, nobody being added, by the game's tie rule "
            "(under `first` as if reached now: after everyone already at that score), with the board's "
            "total and the percentile the player read would give at that rank."
        ),
    ),
    player_read(
        id="player_boards",
        route="player-boards",
        tail="boards",
        read=PLAYER_BOARDS,
        answer=serializers.PlayerBoardsSerializer,
        description=(
            "The player on every board kind of the current season, in the current day, week and month, "
            "where they have a visible score: rank, score, total, percentile and tier (null on a board "
            "without tiers); 404 `not_ranked` when on none."
        ),
    ),
    board_read(
        id="board_around",
        route="board-around",
        tail="players/{player_id}/around",
        read=AROUND,
        answer=serializers.AroundSerializer,
        query=(R,),
        description="The 2r+1 entries around the player; near either end the window slides.",
    ),
]
