"""Ranks by tie rule over points in display order (pure; used for frozen standings).

competition "1224": 1 + players with strictly more; dense "1223": 1 + distinct higher scores;
first "1234": the position.
"""

from collections.abc import Iterable


class Ranker:
    """Ranks handed out one at a time, for points arriving in display order (highest first): a
    board of any size is ranked while it streams by, holding three numbers."""

    __slots__ = ("current", "distinct", "position", "previous", "rule")

    def __init__(self, rule: str) -> None:
        self.rule = rule
        self.position = 0
        self.distinct = 0
        self.previous: int | None = None
        self.current = 0

    def rank(self, points: int) -> int:
        self.position += 1
        if self.rule == "first":
            return self.position
        if points != self.previous:
            self.distinct += 1
            self.current = self.position if self.rule == "competition" else self.distinct
            self.previous = points
        return self.current


def ranks_for(points_in_order: Iterable[int], rule: str) -> list[int]:
    """Ranks for points already in display order (highest first)."""
    ranker = Ranker(rule)
    return [ranker.rank(points) for points in points_in_order]
