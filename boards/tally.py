"""The scoring rule in Python, and the shapes a whole board travels in.

The rule is stated once per language: the Lua writers (lua/ranking_lib.lua `sum_score`, `best_score`,
used by apply_events.lua and apply_boards.lua) apply it one event
at a time as results arrive; the ledger's derivation (scoring/selectors.py) states it in SQL, one
aggregate per board kind, for rebuilds, the freeze, corrections and the consistency checks; and
`Tally` here folds scores already on the boards (a week re-derived from its day boards,
windows.py). The tests hold the three to each other: the ledger's boards equal the writer's member
for member (FLUSHALL + rebuild), and a week derived from its days equals the writer's week.

- Sum boards (`all`, `daily`, `weekly`, `monthly`): points add up; the player "reached" the sum
  at the latest accept time of a positive result (the earliest, while every result is 0).
- Best boards (`best`): the best single result, reached when it was first scored.
- Lower-is-better games: every board keeps the lowest value, reached when it was first scored.
Times are whole seconds from the season's start (`reached_s`), as the codec stores them.

A board in memory is a `BoardScores` (small: a few players' entries, a test's board); a board
streamed is a run of `BoardEntry` rows, as the ledger's derivation yields them.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .codec import ScoreCodec
from .keys import BoardRef
from .kinds import KINDS

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
        return KINDS[self.ref.board].ttl_left_s(self.last_write, now)

    def expired(self, now: datetime) -> bool:
        left = self.ttl_left_s(now)
        return left is not None and left <= 0


# One member of one board: (board kind, season id, region, period, player id, encoded score, the
# latest accept time of this player's results on it, in microseconds since the epoch: what the
# board's lifetime counts from). Plain tuples of plain values: millions of them stream by.
BoardEntry = tuple[str, int, str, str, str, int, int]


def moment_of(epoch_us: int) -> datetime:
    """A `BoardEntry`'s microseconds since the epoch as an aware datetime (UTC)."""
    return EPOCH + timedelta(microseconds=epoch_us)


def epoch_us(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def board_entries(boards: Iterable[BoardScores]) -> Iterator[list[BoardEntry]]:
    """In-memory boards as streamed entries, each board in display order (score descending, then
    player id), one chunk per board: what `standings_store` takes."""
    for board in boards:
        ref = board.ref
        ordered = sorted(board.scores.items(), key=lambda item: (-item[1], item[0]))
        last = epoch_us(board.last_write)
        yield [(ref.board, ref.season_id, ref.region, ref.period, p, s, last) for p, s in ordered]
