"""The tie rules (docs/api.md), stated once in Python: what each rule's rank counts, the
streaming ranker of the frozen standings, and the rule's window function in the freeze's SQL. The
same arithmetic on a sorted set is lua/ranking_lib.lua; scoring/tests/test_tie_rules.py holds the
Python, the Lua and the SQL to the same ranks, entry by entry.

The rule is `seasons.models.TieRule` (a string enum: a game's `tie_rule`, a plain string when it
comes from the catalog, is equal to it and hashes alike). Display order: encoded score descending
(points, then who reached them first), then player id by code point. A rank is 1 + a count of what
stands above the entry (`counted_above`):
    competition "1224"  players with strictly more points                     Above.MORE_POINTS
    dense       "1223"  distinct points values above (the board's companion   Above.DISTINCT_POINTS
                        set `<board>:d` holds them: `needs_distinct_points`)
    first       "1234"  entries ahead in display order: a higher encoded       Above.AHEAD
                        score, or the same score and a smaller player id
So under competition and dense, equal points share a rank (`ties_share_rank`); under first none do.
"""

import enum
from collections.abc import Iterable

from seasons.models import TieRule

Scored = tuple[str, int]  # (player id, encoded score)


class Above(enum.Enum):
    """What a rank counts above an entry: the rank is 1 + that count (`rank_from`)."""

    MORE_POINTS = "players with strictly more points"
    DISTINCT_POINTS = "distinct points values above"
    AHEAD = "entries ahead in display order"


_ABOVE: dict[str, Above] = {
    TieRule.COMPETITION: Above.MORE_POINTS,
    TieRule.DENSE: Above.DISTINCT_POINTS,
    TieRule.FIRST: Above.AHEAD,
}

# The rank as a PostgreSQL window function, per count: over a window ordered by points descending
# (`by_points`: its peers are the equal points) or by display order (`in_order`).
_SQL = {
    Above.MORE_POINTS: "rank() OVER {by_points}",
    Above.DISTINCT_POINTS: "dense_rank() OVER {by_points}",
    Above.AHEAD: "row_number() OVER {in_order}",
}


def tie_rule(value: str) -> TieRule:
    """A game's rule as the enum; ValueError on a value that is no rule."""
    return TieRule(value)


def counted_above(rule: str) -> Above:
    """What `rule`'s rank counts above an entry."""
    return _ABOVE[rule]


def ties_share_rank(rule: str) -> bool:
    """Whether entries with equal points share a rank (competition, dense); under `first` each
    entry's rank is its position."""
    return _ABOVE[rule] is not Above.AHEAD


def needs_distinct_points(rule: str) -> bool:
    """Whether the rule's boards keep the distinct-points companion set (`<board>:d`, written with
    the board by the write scripts and the rebuilds): dense ranks count distinct points."""
    return _ABOVE[rule] is Above.DISTINCT_POINTS


def rank_from(count: int) -> int:
    """The rank of an entry with `count` of what its rule counts above it."""
    return 1 + count


def ranks_from(counts: Iterable[int | str]) -> list[int]:
    """`rank_from` for many counts (as Redis replies them: integers, or their text)."""
    return [1 + int(count) for count in counts]


def rank_ahead(player_id: str, higher: int, tied: Iterable[str]) -> int:
    """The `first` rank of `player_id` at some encoded score: 1 + the `higher` entries with a
    higher score + the entries of `tied` (those with the same score) with a smaller id, by code
    point (Redis's byte order for the ASCII ids). The player need not be among them."""
    return 1 + higher + sum(1 for other in tied if other < player_id)


def _display_key(entry: Scored) -> tuple[int, str]:
    return -entry[1], entry[0]


def display_order(entries: Iterable[Scored]) -> list[Scored]:
    """(player id, encoded score) entries in display order."""
    return sorted(entries, key=_display_key)


class Ranker:
    """Ranks handed out one at a time, for points arriving in display order (highest first): a
    board of any size is ranked while it streams by, holding three numbers."""

    __slots__ = ("current", "dense", "distinct", "position", "previous", "shared")

    def __init__(self, rule: str) -> None:
        above = counted_above(rule)
        self.shared = above is not Above.AHEAD
        self.dense = above is Above.DISTINCT_POINTS
        self.position = 0
        self.distinct = 0
        self.previous: int | None = None
        self.current = 0

    @classmethod
    def resumed(cls, rule: str, *, position: int, points: int, rank: int) -> "Ranker":
        """A ranker for entries from 0-based display position `position` on, the first of them
        with `points` and `rank`: a rank counted on the board (`counted_above`), since that entry
        may tie with entries before it that this ranker never sees."""
        ranker = cls(rule)
        ranker.position = position
        ranker.previous = points
        ranker.current = ranker.distinct = rank
        return ranker

    def rank(self, points: int) -> int:
        self.position += 1
        if not self.shared:
            return self.position
        if points != self.previous:
            self.distinct += 1
            self.current = self.distinct if self.dense else self.position
            self.previous = points
        return self.current


def ranks_for(points_in_order: Iterable[int], rule: str) -> list[int]:
    """Ranks for points already in display order (highest first)."""
    ranker = Ranker(rule)
    return [ranker.rank(points) for points in points_in_order]


def sql_rank(rule: str, *, by_points: str, in_order: str) -> str:
    """`rule`'s rank as a PostgreSQL window function over one board's rows, given the names of two
    windows of it: `by_points` ordered by points descending, `in_order` in display order.
    competition is rank() (1 + rows with more points), dense dense_rank() (1 + distinct points
    above), first row_number() (the position + 1)."""
    return _SQL[_ABOVE[rule]].format(by_points=by_points, in_order=in_order)
