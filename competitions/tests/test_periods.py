"""Periods from the window and the reset cron (competitions/periods.py)."""

from datetime import UTC, datetime, timedelta

from competitions.league_periods import league_schedule
from competitions.periods import (
    Schedule,
    period_holding,
    period_next,
    period_number,
    period_shown,
    period_to_enter,
    periods_started,
)


def at(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=UTC)


def test_one_period_without_reset_is_cut_by_ends_at():
    schedule = Schedule(at(5, 18), at(5, 18, 30), 3600, "", 30)
    only = period_number(schedule, 1)
    assert (only.starts_at, only.ends_at) == (at(5, 18), at(5, 18, 30))
    assert period_number(schedule, 2) is None
    assert only.status_at(at(5, 18, 30) + timedelta(seconds=29)) == "grace"
    assert only.status_at(at(5, 18, 30) + timedelta(seconds=30)) == "final"


def test_weekly_reset_periods_fire_at_or_after_the_start_and_before_the_end():
    # Fridays 18:00 (Dec 4, 11, 18, 25 2026); starts exactly on a fire: that fire counts.
    schedule = Schedule(at(4, 18), at(25, 18), 3600 * 24 * 10, "0 18 * * 5", 30)
    periods = list(periods_started(schedule, at(31)))
    assert [(p.index, p.starts_at, p.ends_at) for p in periods] == [
        (1, at(4, 18), at(11, 18)),  # cut short by the next fire
        (2, at(11, 18), at(18, 18)),
        (3, at(18, 18), at(25, 18)),  # the fire at ends_at starts nothing
    ]
    assert period_holding(schedule, at(12)).index == 2
    assert period_holding(schedule, at(25, 18)) is None


def test_short_periods_leave_gaps_between_them():
    schedule = Schedule(at(1, 17), None, 3600, "0 18 * * *", 0)
    assert period_number(schedule, 1).starts_at == at(1, 18)
    between = at(2, 12)
    assert period_holding(schedule, between) is None
    assert period_next(schedule, between).index == 2
    assert period_to_enter(schedule, between).index == 2
    assert period_shown(schedule, between).index == 2  # no active one: the next
    assert period_shown(schedule, at(1, 17)).index == 1  # upcoming
    assert period_number(schedule, 400).starts_at == datetime(2028, 1, 4, 18, tzinfo=UTC)  # 399 days on


def test_ending_cuts_the_current_period_and_starts_no_later_one():
    base = Schedule(at(1), None, 86400, "0 0 * * *", 60)
    ended = Schedule(at(1), None, 86400, "0 0 * * *", 60, ended_at=at(3, 6))
    assert period_number(base, 3).ends_at == at(4)
    assert period_number(ended, 3).ends_at == at(3, 6)
    assert period_number(ended, 4) is None
    assert period_to_enter(ended, at(3, 7)) is None
    assert period_shown(ended, at(5)).index == 3


def test_a_league_period_starts_at_its_start_then_at_each_fire():
    # Mondays 00:00 (Dec 7, 14 2026); the league starts on a Friday afternoon: its first period
    # runs from then to the first fire, not from the first fire on.
    schedule = league_schedule(starts_at=at(4, 15, 30), reset="0 0 * * 1")
    assert [(p.index, p.starts_at, p.ends_at) for p in periods_started(schedule, at(10))] == [
        (1, at(4, 15, 30), at(7)),
        (2, at(7), at(14)),
        (3, at(14), at(21)),  # the next, upcoming
    ]
    assert period_holding(schedule, at(4, 15, 30)).index == 1
    assert period_holding(schedule, at(4, 15, 29)) is None
    assert period_holding(schedule, at(7)).index == 2
    # Starting on a fire: that fire is the first period's start, counted once.
    aligned = league_schedule(starts_at=at(7), reset="0 0 * * 1")
    assert [(p.starts_at, p.ends_at) for p in periods_started(aligned, at(8))] == [(at(7), at(14)), (at(14), at(21))]
