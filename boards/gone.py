"""Players hidden or deleted after their season froze: left out of every public frozen read.

A frozen board's standings (FrozenStanding) are written once, at the freeze, without the players
hidden then. A player hidden or deleted later keeps their rows; the reads leave those rows out and
take them out of everyone's rank at read time, without rewriting the standings:

- the rows of such players on one board are looked up by id (the game's hidden players through
  the partial index `player_hidden`, their rows through the `standing_player` index), so a read
  costs a few index lookups per hidden player, not a pass over a board of millions;
- a stored rank is 1 + what the tie rule counts above the entry (ranking.py); the visible rank is
  that minus what of it is gone: under `competition` the gone rows with a smaller rank (more
  points), under `first` the gone rows at a smaller position, under `dense` the tie groups above
  whose every member is gone (a distinct points value nobody visible holds any more);
- a visible position is the stored position minus the gone rows before it, and back (`raw`).

Unhiding a player needs nothing: their rows count again at the next read.
"""

from bisect import bisect_left
from collections.abc import Iterable, Sequence

from django.db.models import Q, QuerySet

from .models import FrozenStanding, Player
from .ranking import Above, counted_above

GoneRow = tuple[str, int, int, int]  # (player id, position, rank, score)


def gone_players(*, game_id: int) -> QuerySet[Player]:
    """The game's hidden and deleted players (a deleted account's row stays, hidden): through the
    partial index `player_hidden`."""
    return Player.objects.filter(game_id=game_id).filter(Q(hidden=True) | Q(deleted_at__isnull=False))


class Gone:
    """One frozen board's rows of hidden and deleted players, and the arithmetic that leaves them
    out of the positions and ranks of the others."""

    def __init__(self, rule: str, rows: Sequence[GoneRow], empty_groups: Iterable[int]) -> None:
        self.above = counted_above(rule)
        self.ids = frozenset(r[0] for r in rows)
        self.positions = sorted(r[1] for r in rows)
        self.ranks = sorted(r[2] for r in rows)
        self.scores = [r[3] for r in rows]
        self.empty_groups = sorted(empty_groups)

    def __len__(self) -> int:
        return len(self.positions)

    def rank(self, *, rank: int, position: int) -> int:
        """The rank of a row stored with `rank` at `position`, the gone rows not counted (a gone
        row itself gets the rank it would have if it alone were visible)."""
        if self.above is Above.AHEAD:
            return rank - bisect_left(self.positions, position)
        if self.above is Above.MORE_POINTS:
            return rank - bisect_left(self.ranks, rank)
        return rank - bisect_left(self.empty_groups, rank)

    def visible(self, position: int) -> int:
        """The visible position of the row at stored `position`."""
        return position - bisect_left(self.positions, position)

    def raw(self, visible: int) -> int:
        """The stored position of the visible row at `visible` (past the end: where it would be)."""
        raw = visible
        for position in self.positions:
            if position > raw:
                break
            raw += 1
        return raw


def gone_rows(standings: QuerySet[FrozenStanding], *, game_id: int) -> list[GoneRow]:
    """The rows of the game's hidden and deleted players among one board's standings, in display
    order: one query, a lookup in the standings' player index per hidden player."""
    ids = gone_players(game_id=game_id).values("player_id")
    rows = standings.filter(player_id__in=ids).order_by("position")
    return [(p, pos, r, s) for p, pos, r, s in rows.values_list("player_id", "position", "rank", "score")]


def _runs(rows: Sequence[GoneRow]) -> list[tuple[int, int, int]]:
    """(first position, last position, rank) of each run of gone rows at consecutive positions
    with the same rank."""
    runs: list[tuple[int, int, int]] = []
    for _, position, rank, _ in rows:
        if runs and runs[-1][1] == position - 1 and runs[-1][2] == rank:
            runs[-1] = (runs[-1][0], position, rank)
        else:
            runs.append((position, position, rank))
    return runs


def empty_groups(standings: QuerySet[FrozenStanding], rows: Sequence[GoneRow]) -> list[int]:
    """The ranks of the tie groups (dense) all of whose members are among `rows`: a run of gone
    rows is a whole group when neither row beside it (one lookup by position each) shares its rank."""
    runs = _runs(rows)
    beside = {p for first, last, _ in runs for p in (first - 1, last + 1) if p >= 0}
    if not beside:
        return []
    ranks = dict(standings.filter(position__in=beside).values_list("position", "rank"))
    return [rank for first, last, rank in runs if ranks.get(first - 1) != rank and ranks.get(last + 1) != rank]


def board_gone(standings: QuerySet[FrozenStanding], *, rule: str, game_id: int) -> Gone:
    """The hidden and deleted players' rows of one frozen board (`standings`)."""
    rows = gone_rows(standings, game_id=game_id)
    groups = empty_groups(standings, rows) if rows and counted_above(rule) is Above.DISTINCT_POINTS else []
    return Gone(rule, rows, groups)
