"""A league's periods: the tournament machinery (periods.py) with a league's rules. The first period
starts at `starts_at` (whether or not the `reset` cron expression fires then), each later one at
each fire after it, and each lasts until the next fire; each has a grace of LEAGUE_GRACE_S (60 s)
in which results played inside it still count."""

from datetime import datetime

from .league_models import LEAGUE_GRACE_S, League
from .periods import Period, Schedule, period_holding, period_last_before, period_number, period_shown

# A period lasts until the next fire: its duration is only a bound the next fire always cuts.
LEAGUE_DURATION_S = 100 * 366 * 86400


def league_schedule(*, starts_at: datetime, reset: str) -> Schedule:
    return Schedule(
        starts_at=starts_at,
        ends_at=None,
        duration_s=LEAGUE_DURATION_S,
        reset=reset,
        grace_s=LEAGUE_GRACE_S,
        first_at_start=True,
    )


def schedule_of(league: League) -> Schedule:
    return league_schedule(starts_at=league.starts_at, reset=league.reset)


def league_period(league: League, index: int) -> Period | None:
    return period_number(schedule_of(league), index)


def league_period_holding(league: League, moment: datetime) -> Period | None:
    return period_holding(schedule_of(league), moment)


def league_period_shown(league: League, now: datetime) -> Period | None:
    """The period a league shows by default: the active one, else the next, else the last."""
    return period_shown(schedule_of(league), now)


def league_period_last_started(league: League, now: datetime) -> Period | None:
    return period_last_before(schedule_of(league), now)
