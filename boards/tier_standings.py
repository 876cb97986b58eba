"""A board's tiers with their live boundaries (`GET .../boards/{board}/tiers`, docs/api.md "Tiers"):
for each tier, how many ranked players are in it now and the best and worst score among them.

Each tier holds one run of the board's display order (tiers.py says why), so the boundaries are
positions: the number of entries that meet each cutoff. A `score` cutoff is met by the entries
whose stored points reach the cutoff's (one count); a `rank` or `percent` cutoff C by the entries
ranked at most C: under `first` the first C, under `competition` every entry with at least the
points of the C-th (ties on it share its rank), under `dense` every entry with at least the C-th
distinct points value. The scores are then those of the run's first and last entries.

On a live board of one sorted set these are a few Redis commands; on a frozen board the final
standings without the players hidden or deleted since (gone.py); a board split by player merges
its shards' first entries (sharded.py), which reads as many entries as the last boundary.
"""

from collections.abc import Callable
from typing import Any

from common.redis import client

from .lookups import stored_points
from .selectors import BoardView, _frozen_gone, _split, board_total
from .tiers import Tiers

Boundaries = list[tuple[str, Any, int, int | None, int | None]]  # name, cutoff, players, min, max


class _Live:
    """A live board of one sorted set: counts by points, the entry at a position."""

    def __init__(self, view: BoardView) -> None:
        self.view, self.redis, self.span = view, client(), view.codec.time_span

    def count_at_least(self, points: int) -> int:
        return int(self.redis.zcount(self.view.ref.key, points * self.span, "+inf"))

    def points_at(self, position: int) -> int:
        found: list[Any] = self.redis.zrevrange(self.view.ref.key, position, position, withscores=True)
        return self.view.codec.points(found[0][1])

    def distinct_at(self, index: int) -> int | None:
        found = self.redis.zrevrange(self.view.ref.distinct_key, index, index, withscores=True)
        return int(found[0][1]) if found else None


class _Listed:
    """A board read as its entries in display order (a frozen board's visible rows, or a split
    board's merged first entries), as stored points."""

    def __init__(self, points: list[int]) -> None:
        self.points = points

    def count_at_least(self, points: int) -> int:
        low, high = 0, len(self.points)
        while low < high:  # points descend
            mid = (low + high) // 2
            if self.points[mid] >= points:
                low = mid + 1
            else:
                high = mid
        return low

    def points_at(self, position: int) -> int:
        return self.points[position]

    def distinct_at(self, index: int) -> int | None:
        seen = sorted(set(self.points), reverse=True)
        return seen[index] if index < len(seen) else None


def _entries_points(view: BoardView, total: int) -> list[int]:
    """A frozen or split board's stored points in display order."""
    codec, ascending = view.codec, view.game.ascending
    if view.frozen:
        gone = _frozen_gone(view)
        scores = view.standings().order_by("position").values_list("player_id", "score")
        return [codec.stored_points(score, ascending=ascending) for player, score in scores if player not in gone.ids]
    split = _split(view)
    assert split is not None
    _, rows = split.top(total)
    return [codec.points(encoded) for _, encoded, _ in rows]


def _meeting(board: Any, view: BoardView, tiers: Tiers, total: int) -> Callable[[Any, int], int]:
    """How many entries meet a cutoff (for rank and percent, the rank limit it stands for)."""
    rule = view.game.tie_rule

    def count(cutoff: Any, limit: int) -> int:
        if tiers.by == "score":
            return board.count_at_least(max(0, stored_points(view, cutoff)))
        if limit <= 0:
            return 0
        if limit >= total:
            return total
        if rule == "first":
            return limit
        if rule == "dense":
            value = board.distinct_at(limit - 1)
            return total if value is None else board.count_at_least(value)
        return board.count_at_least(board.points_at(limit - 1))

    return count


def tier_boundaries(*, view: BoardView, tiers: Tiers) -> Boundaries:
    """Each tier (best first): its name, cutoff, players now, and their lowest and highest score."""
    total = board_total(view)
    board: Any = _Live(view) if not view.frozen and _split(view) is None else _Listed(_entries_points(view, total))
    count = _meeting(board, view, tiers, total)
    limits = tiers.rank_cutoffs(total) if tiers.by != "score" else (0,) * len(tiers.cutoffs)
    ends = [count(cutoff, limit) for cutoff, limit in zip(tiers.cutoffs, limits, strict=True)] + [total]
    cutoffs = [tier["cutoff"] for tier in tiers.document()["tiers"]]
    found: Boundaries = []
    start = 0
    for name, cutoff, end in zip(tiers.names, cutoffs, ends, strict=True):
        end = max(end, start)
        if end > start:
            scores = [view.shown(board.points_at(position)) for position in (start, end - 1)]
            found.append((name, cutoff, end - start, min(scores), max(scores)))
        else:
            found.append((name, cutoff, 0, None, None))
        start = end
    return found


def board_tier_standings(*, view: BoardView) -> dict[str, Any] | None:
    """`{"by", "tiers": [{"name", "cutoff", "players", "min_score", "max_score"}]}`; None when the
    board kind has no tiers (404 `no_tiers`)."""
    tiers = view.tiers
    if tiers is None:
        return None
    rows = tier_boundaries(view=view, tiers=tiers)
    return {
        "by": tiers.by,
        "tiers": [
            {"name": name, "cutoff": cutoff, "players": players, "min_score": low, "max_score": high}
            for name, cutoff, players, low, high in rows
        ],
    }
