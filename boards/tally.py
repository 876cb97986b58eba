"""The scoring rule in Python: how a player's results fold into one board score.

The Lua writer (lua/apply_events.lua) applies the rule one event at a time as results arrive;
`Tally` folds many at once, in any order: the ledger's rebuilds and corrections
(scoring/selectors.py) and a week re-derived from its days (windows.py) both use it, so the
service states the rule once in each language. The tests keep their own reference.

- Sum boards (`all`, `daily`, `weekly`, `monthly`): points add up; the player "reached" the sum
  at the latest accept time of a positive result (the earliest, while every result is 0).
- Best boards (`best`): the best single result, reached when it was first scored.
- Lower-is-better games: every board keeps the lowest value, reached when it was first scored.
Times are whole seconds from the season's start (`reached_s`), as the codec stores them.
"""

from dataclasses import dataclass
from datetime import datetime

from .codec import ScoreCodec
from .keys import BoardRef
from .kinds import KINDS


@dataclass
class Tally:
    points: int  # sum of points
    last_positive_s: int | None  # the latest reach of a result with points > 0
    first_s: int  # the earliest reach of any result
    best: int  # the best single result ...
    best_s: int  # ... and when it was first reached
    low: int  # the lowest single result (lower-is-better games) ...
    low_s: int  # ... and when it was first reached

    @classmethod
    def of_result(cls, points: int, reached_s: int) -> "Tally":
        return cls(points, reached_s if points > 0 else None, reached_s, points, reached_s, points, reached_s)

    @classmethod
    def of_score(cls, codec: ScoreCodec, score: int, *, ascending: bool) -> "Tally":
        """A board's stored score read back as a tally (a day board folded into its week)."""
        stored, reached = codec.points(score), codec.reached_s(score)
        value = codec.shown_points(stored, ascending=ascending)
        return cls(value, reached if value > 0 else None, reached, value, reached, value, reached)

    def merge(self, other: "Tally") -> None:
        self.points += other.points
        if other.last_positive_s is not None and (
            self.last_positive_s is None or other.last_positive_s > self.last_positive_s
        ):
            self.last_positive_s = other.last_positive_s
        self.first_s = min(self.first_s, other.first_s)
        if (other.best, -other.best_s) > (self.best, -self.best_s):
            self.best, self.best_s = other.best, other.best_s
        if (other.low, other.low_s) < (self.low, self.low_s):
            self.low, self.low_s = other.low, other.low_s

    def copy(self) -> "Tally":
        return Tally(**self.__dict__)

    def score(self, codec: ScoreCodec, *, best: bool, ascending: bool) -> int:
        """The encoded score a board of this kind holds for the tally."""
        if ascending:
            return codec.encode(points=codec.stored_points(self.low, ascending=True), reached_s=self.low_s)
        if best:
            return codec.encode(points=self.best, reached_s=self.best_s)
        reached = self.last_positive_s if self.points > 0 and self.last_positive_s is not None else self.first_s
        return codec.encode(points=self.points, reached_s=reached)


@dataclass
class BoardScores:
    """A whole board as it must be: each player's encoded score, and when the board was last
    written (day, week and month boards live for a while after their last write)."""

    ref: BoardRef
    scores: dict[str, int]
    last_write: datetime

    def ttl_left_s(self, now: datetime) -> int | None:
        """Seconds the board should still live (periodic boards), None for no expiry."""
        ttl = KINDS[self.ref.board].ttl_s()
        if ttl == 0:
            return None
        return int(ttl - (now - self.last_write).total_seconds())

    def expired(self, now: datetime) -> bool:
        left = self.ttl_left_s(now)
        return left is not None and left <= 0
