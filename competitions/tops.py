"""A period's top as the top read answers it (apis.py `tournament_top`), for the readers that are
not that operation: the live pushes (live.py) and the tournament's page (pages.py). They read
through the same declaration (`apis.TOP`, `apis.standing_value`) so that they show what the REST
read shows, a final period's standings (from PostgreSQL) included."""

from datetime import datetime
from typing import Any

from . import standings
from .apis import TOP, standing_value
from .models import Tournament
from .selectors import period_status
from .standings import StandingView


def standing_top(
    *, tournament: Tournament, index: int | None, n: int, now: datetime
) -> tuple[StandingView, list[dict[str, Any]]]:
    """The period `index` (None: the one reads default to) and its top `n` entries. Raises
    standings.UnknownPeriod for a period after the next one."""
    conf = standings.conf_current(tournament)
    period = standings.period_of(conf, index, now)
    view = StandingView(conf=conf, period=period, status=period_status(tournament, period, now))
    return view, standing_value(tournament, view, TOP, {"n": n})
