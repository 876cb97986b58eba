"""Board scores: points and "first to reach" time packed into the 53 exact bits of a double.

    score = points * 2**time_bits + (2**time_bits - 1 - reached_s)

`reached_s` is whole seconds from the season's start to when the service accepted the result that
brought the player to this score. Higher points always win; among equal points the earlier
reacher has the larger score. `time_bits` is fixed per season, sized so the season's window plus
its grace fits (`seasons.services.time_bits_for_window`); the points that remain are the capacity,
and going past it is an explicit `ScoreOverflow`, never silent rounding (Redis scores are doubles:
exact only below 2**53).
"""

from dataclasses import dataclass

EXACT_BITS = 53


class ScoreOverflow(ValueError):
    pass


@dataclass(frozen=True)
class ScoreCodec:
    time_bits: int

    @property
    def time_span(self) -> int:
        return 1 << self.time_bits

    @property
    def max_reached_s(self) -> int:
        return self.time_span - 1

    @property
    def max_points(self) -> int:
        return (1 << (EXACT_BITS - self.time_bits)) - 1

    def encode(self, *, points: int, reached_s: int) -> int:
        if points < 0:
            raise ValueError("points must be non-negative")
        if points > self.max_points:
            raise ScoreOverflow(f"{points} points exceed the season's exact capacity of {self.max_points}")
        reached = min(max(reached_s, 0), self.max_reached_s)
        return points * self.time_span + (self.max_reached_s - reached)

    def points(self, score: int | float) -> int:
        return int(score) >> self.time_bits

    def reached_s(self, score: int | float) -> int:
        return self.max_reached_s - (int(score) & self.max_reached_s)

    def min_score_for_points(self, points: int) -> int:
        return points * self.time_span

    def stored_points(self, value: int, *, ascending: bool) -> int:
        """What a board stores for a value: itself, or for lower-is-better boards the capacity minus
        it, so that Redis's "higher is better" order, ranks and counts hold unchanged. A value past
        the capacity maps past it too (refused as overflow)."""
        if not ascending:
            return value
        return self.max_points - value if value <= self.max_points else self.max_points + 1

    def shown_points(self, stored: int, *, ascending: bool) -> int:
        return self.max_points - stored if ascending else stored


def reached_seconds(*, season_start_us: int, accepted_us: int) -> int:
    """Whole seconds from the season's start to the acceptance (0 before it), both given in
    microseconds since the epoch (the writer has them for the dedup tag already)."""
    return max(0, (accepted_us - season_start_us) // 1_000_000)
