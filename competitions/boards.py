"""A tournament period's board as the board writer needs it (boards/writer.py `CompetitionBoard`):
its key and hash tag, its score codec and its kind. Results of `best`, and of `sum` with `desc`, are
added by the same apply script as the season boards (scoring's worker passes these with the events
they counted for); the others are rewritten from the ledger (scores.py)."""

import time
from typing import Protocol

from boards.ranking import needs_distinct_points
from boards.writer import CompetitionBoard
from seasons.services import time_bits_for_window

from . import keys
from .counters import keys_expire_at
from .models import Order, Scoring, Tournament
from .periods import Period


class Window(Protocol):
    """What sizes a period's board: a tournament, or its read configuration (standings.py)."""

    @property
    def duration_s(self) -> int: ...

    @property
    def grace_s(self) -> int: ...


def period_time_bits(tournament: Window) -> int:
    """Bits of the reach second on a period's board: a period and its grace fit."""
    return time_bits_for_window(tournament.duration_s + tournament.grace_s)


def period_board(*, tournament: Tournament, period: Period) -> CompetitionBoard:
    """The period's board (its `best` says how the apply script adds to it; a board of `latest`,
    or of `sum` with `asc`, is only ever rewritten: scores.py)."""
    game = tournament.game
    return CompetitionBoard(
        game=game.slug,
        key=keys.board_key(game.slug, tournament.slug, period.index),
        tag=keys.period_tag(game.slug, tournament.slug, period.index),
        starts_at=period.starts_at,
        time_bits=period_time_bits(tournament),
        best=tournament.scoring == Scoring.BEST,
        ascending=tournament.order == Order.ASC,
        dense=needs_distinct_points(game.tie_rule),
        ttl_s=max(60, keys_expire_at(period) - int(time.time())),
    )
