"""The reads of revision 3 that look things up across a board or across boards (docs/api.md,
"Reading boards"): several players at once (`players?ids=`), the rank a score would have
(`rank?score=`), and a player on every board kind of the current season (`players/{id}/boards`).

Like the other reads (selectors.py), each is one Lua script on a live board of one sorted set
(`*_call` gives its KEYS and ARGV, `*_parse` reads its reply: both entrances use them), a
scatter-gather over the shards of a board split by player (sharded.py: one call per shard per
step, never one per player), or the final standings of a frozen season (PostgreSQL, leaving out the
players hidden or deleted since: gone.py). Entries are selectors.py's, so whatever an entry gains
(a tier) reaches these reads too.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from common.redis import lua_path
from seasons.catalog import Catalog

from . import keys, selectors, sharded
from .kinds import BOARD_NAMES
from .models import FrozenStanding
from .selectors import (
    BoardView,
    Call,
    Entry,
    Standing,
    _entries,
    _frozen_entries,
    _frozen_gone,
    _run,
    _split,
    _split_entries,
    board_player,
    histogram_share,
    player_parse,
)

PLAYERS_SCRIPT = lua_path(__file__, "ranking_lib.lua", "players.lua")
SCORE_RANK_SCRIPT = sharded.SCORE_RANK_SCRIPT  # a board of one set, or each shard's part
PLAYER_BOARDS_SCRIPT = lua_path(__file__, "ranking_lib.lua", "player_boards.lua")


# --------------------------------------------------------------------------- several players at once
def players_call(view: BoardView, ids: list[str]) -> Call:
    return view.keys(), [view.codec.time_span, view.game.tie_rule, *ids]


def players_of(ids: list[str], entries: list[Entry]) -> dict[str, Any]:
    """The answer: the entries found (best rank first), and the ids without one, in the order asked."""
    found = {e["player_id"] for e in entries}
    return {"entries": entries, "missing": [i for i in ids if i not in found]}


def players_parse(view: BoardView, ids: list[str], reply: list[Any]) -> dict[str, Any]:
    return players_of(ids, selectors.tiered(view, _entries(reply, view), lambda: selectors.board_total(view)))


def board_players(*, view: BoardView, ids: list[str]) -> dict[str, Any]:
    """The entries of these players on the board, as /top gives them, and those with no visible
    score: one script on one set; a ZMSCORE and a count script per shard on a split board."""
    if view.frozen:
        gone = _frozen_gone(view)
        rows = view.standings().filter(player_id__in=ids).order_by("position")
        return players_of(ids, _frozen_entries(view, rows, gone))
    split = _split(view)
    if split is not None:
        entries = _entries(_split_entries(split, split.members(ids)), view)
        return players_of(ids, selectors.tiered(view, entries, split.total))
    return players_parse(view, ids, _run(PLAYERS_SCRIPT, players_call(view, ids)))


# --------------------------------------------------------------------------- the rank of a score
@dataclass(frozen=True)
class ScoreRank(selectors.Percentiled):
    """The rank a player with `score` would have now, nobody being added; `total` and `lower`
    count the board's visible players (all of them, and those with a strictly worse score)."""

    score: int
    rank: int
    total: int
    lower: int
    approximate: tuple[float, float] | None = None


def stored_points(view: BoardView, score: int) -> int:
    """The points the board would store for `score`: the value, or on a lower-is-better board the
    capacity minus it. A score past the capacity maps where no entry can be: above every one
    (capacity + 1), or on a lower-is-better board below every one (-1)."""
    codec = view.codec
    if score > codec.max_points:
        return -1 if view.game.ascending else codec.max_points + 1
    return codec.stored_points(score, ascending=view.game.ascending)


def score_rank_call(view: BoardView, score: int) -> Call:
    ref = view.ref
    args = [stored_points(view, score), view.codec.time_span, view.game.tie_rule]
    return [ref.key, ref.distinct_key], [*args, selectors.EXACT_RANKS, selectors.DISTRIBUTION_BUCKETS]


def score_rank_parse(view: BoardView, score: int, reply: list[Any]) -> ScoreRank:
    rank, total, lower, below, own = (int(x) for x in reply)
    return ScoreRank(score, rank, total, lower, histogram_share(below=below, own=own, total=total))


def board_score_rank(*, view: BoardView, score: int) -> ScoreRank:
    """The rank a player with `score` would have on the board now, by the game's tie rule (under
    `first` as if reached now: after everyone already there), with the percentile the player read
    gives at that rank."""
    if view.frozen:
        return _frozen_score_rank(view, score)
    split = _split(view)
    if split is not None:
        points = stored_points(view, score)
        exact, buckets = selectors.EXACT_RANKS, selectors.DISTRIBUTION_BUCKETS
        return score_rank_parse(view, score, split.score_rank(points, exact_ranks=exact, buckets=buckets))
    return score_rank_parse(view, score, _run(SCORE_RANK_SCRIPT, score_rank_call(view, score)))


def _frozen_score_rank(view: BoardView, score: int) -> ScoreRank:
    """From the final standings (scores as shown), without the players hidden or deleted since."""
    gone = _frozen_gone(view)
    visible: QuerySet[FrozenStanding] = view.standings()
    if gone.ids:
        visible = visible.exclude(player_id__in=list(gone.ids))
    better, worse = ("score__lt", "score__gt") if view.game.ascending else ("score__gt", "score__lt")
    rule = view.game.tie_rule
    if rule == "first":  # as if reached now: after everyone already at the score
        above = visible.filter(**{better: score}).count() + visible.filter(score=score).count()
    elif rule == "dense":
        above = visible.filter(**{better: score}).values("score").distinct().count()
    else:
        above = visible.filter(**{better: score}).count()
    return ScoreRank(score, 1 + above, visible.count(), visible.filter(**{worse: score}).count())


# --------------------------------------------------------------------------- a player's boards
@dataclass(frozen=True)
class PlayerBoards:
    player_id: str
    display_name: str | None
    boards: list[Entry]


def board_standing(*, view: BoardView, standing: Standing) -> Entry:
    """One board of a player's boards read: the one place its fields are put together
    (serializers.PlayerBoardSerializer renders it)."""
    return {
        "board": view.board,
        "period": view.period,
        "rank": standing.rank,
        "score": standing.score,
        "total": standing.total,
        "percentile": standing.percentile,
        "tier": view.tiers.of(score=standing.score, rank=standing.rank, total=standing.total) if view.tiers else None,
    }


def current_boards(*, catalog: Catalog, region: str | None, now: datetime) -> list[BoardView]:
    """Every board kind of the game's current season, in the current day, week and month
    (selectors.board_resolve's errors)."""
    assert catalog.game is not None
    return [
        selectors.board_resolve(
            game=catalog.game,
            seasons=catalog.seasons,
            pointer_id=catalog.pointer_id,
            board=board,
            region=region,
            season=None,
            period=None,
            now=now,
        )
        for board in BOARD_NAMES
    ]


def player_boards_call(views: list[BoardView], player_id: str) -> Call:
    first = views[0]  # one season: one span and one tie rule
    script_keys = [keys.names_key(first.game.slug)]
    for view in views:
        script_keys += [view.ref.key, view.ref.distinct_key]
    args = [player_id, first.codec.time_span, first.game.tie_rule, selectors.EXACT_RANKS]
    return script_keys, [*args, selectors.DISTRIBUTION_BUCKETS]


def player_boards_parse(views: list[BoardView], player_id: str, reply: list[Any]) -> PlayerBoards | None:
    name, *replies = reply
    standings = [
        player_parse(view, player_id, [*r[:4], name, *r[4:]]) if r else None
        for view, r in zip(views, replies, strict=True)
    ]
    return _player_boards_of(views, player_id, standings)


def _player_boards_of(views: list[BoardView], player_id: str, standings: list[Standing | None]) -> PlayerBoards | None:
    found = [(view, s) for view, s in zip(views, standings, strict=True) if s is not None]
    if not found:
        return None
    boards = [board_standing(view=view, standing=s) for view, s in found]
    return PlayerBoards(player_id=player_id, display_name=found[0][1].display_name, boards=boards)


def player_boards(*, views: list[BoardView], player_id: str) -> PlayerBoards | None:
    """The player on each of `views` (current_boards) where they have a visible score, None when
    on none: one script for every board of one set; on boards split by player every board's
    shards at once (sharded.standings_of: two or three round trips); in a frozen season the
    player read of each board."""
    if views[0].frozen:
        return _player_boards_of(views, player_id, [board_player(view=v, player_id=player_id) for v in views])
    splits = [split for view in views if (split := _split(view)) is not None]
    if splits:
        exact, buckets = selectors.EXACT_RANKS, selectors.DISTRIBUTION_BUCKETS
        replies = sharded.standings_of(splits, player_id, exact_ranks=exact, buckets=buckets)
        standings = [player_parse(view, player_id, r or []) for view, r in zip(views, replies, strict=True)]
        return _player_boards_of(views, player_id, standings)
    return player_boards_parse(views, player_id, _run(PLAYER_BOARDS_SCRIPT, player_boards_call(views, player_id)))
