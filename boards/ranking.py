"""Ranks by tie rule over an ordered list of points (pure; used for frozen standings)."""

from collections.abc import Sequence


def ranks_for(points_in_order: Sequence[int], rule: str) -> list[int]:
    """Ranks for points already in display order (highest first).

    competition "1224": 1 + players with strictly more; dense "1223": 1 + distinct higher scores;
    first "1234": the position.
    """
    ranks: list[int] = []
    distinct = 0
    previous: int | None = None
    for position, points in enumerate(points_in_order):
        if rule == "first":
            ranks.append(position + 1)
            continue
        if points != previous:
            distinct += 1
            current = position + 1 if rule == "competition" else distinct
            previous = points
        ranks.append(current)
    return ranks
