"""A tournament's periods, computed from its window and its `reset` cron expression (cronsim),
never stored one by one in advance.

Without `reset`, one period: [starts_at, min(starts_at + duration_s, ends_at)). With `reset`, a
period starts at each time the cron fires at or after `starts_at` and before `ends_at`, and lasts
`duration_s`, cut short by the next fire and by `ends_at`. `ended_at` (the `end` operation) cuts
the period it falls in and starts no later one. Periods are numbered from 1. A period is
`upcoming`, `active`, in `grace` for `grace_s` after its end, then `final`.

Finding period K walks the cron from the start: the fires found are kept per schedule in the
process (`_FIRES`), so a minutely tournament a year old costs the walk once.
"""

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from cronsim import CronSim, CronSimError

UPCOMING, ACTIVE, GRACE, FINAL = "upcoming", "active", "grace", "final"
MAX_PERIODS = 1_000_000  # a walk never goes further (a minutely cron for almost two years)
_ONE_SECOND = timedelta(seconds=1)


class BadCron(ValueError):
    """A `reset` that is not a 5-field cron expression cronsim accepts."""


@dataclass(frozen=True)
class Schedule:
    """What the periods follow from (a tournament's window)."""

    starts_at: datetime
    ends_at: datetime | None  # None: no end (only with a reset)
    duration_s: int
    reset: str  # "" for one period
    grace_s: int
    ended_at: datetime | None = None
    # A league's first period starts at `starts_at` itself even when the cron does not fire then
    # (its later ones at each fire); a tournament's periods all start at fires.
    first_at_start: bool = False

    @property
    def stop(self) -> datetime | None:
        """The moment after which no period runs: the earlier of `ends_at` and `ended_at`."""
        if self.ends_at is None:
            return self.ended_at
        if self.ended_at is None:
            return self.ends_at
        return min(self.ends_at, self.ended_at)


@dataclass(frozen=True)
class Period:
    index: int
    starts_at: datetime
    ends_at: datetime
    grace_s: int

    @property
    def closes_at(self) -> datetime:
        """The end of its grace: after it no result counts and its standings freeze."""
        return self.ends_at + timedelta(seconds=self.grace_s)

    def status_at(self, now: datetime) -> str:
        if now < self.starts_at:
            return UPCOMING
        if now < self.ends_at:
            return ACTIVE
        if now < self.closes_at:
            return GRACE
        return FINAL

    def contains(self, moment: datetime) -> bool:
        return self.starts_at <= moment < self.ends_at


def cron_check(expression: str) -> None:
    """Raise BadCron unless `expression` is a 5-field cron expression."""
    if len(expression.split()) != 5:
        raise BadCron("reset must be a 5-field cron expression (UTC).")
    try:
        CronSim(expression, datetime(2026, 1, 1))
    except CronSimError as exc:
        raise BadCron(f"reset is not a valid cron expression: {exc}") from exc


class _Fires:
    """The fires of one cron expression at or after one start, found so far (in order);
    `first_at_start`: the start itself counts as the first."""

    def __init__(self, reset: str, start: datetime, first_at_start: bool = False) -> None:
        self._iter = CronSim(reset, start - _ONE_SECOND)
        self._start = start
        self.found: list[datetime] = [start] if first_at_start else []
        self.done = False
        self.lock = threading.Lock()

    def upto(self, count: int | None = None, until: datetime | None = None) -> None:
        """Walk until `count` fires are known, or one past `until` is."""
        while not self.done and len(self.found) < MAX_PERIODS:
            if count is not None and len(self.found) >= count:
                return
            if until is not None and self.found and self.found[-1] > until:
                return
            try:
                fire = next(self._iter)
            except StopIteration:
                self.done = True
                return
            if fire >= self._start and (not self.found or fire > self.found[-1]):
                self.found.append(fire)


_FIRES: dict[tuple[str, datetime, bool], _Fires] = {}
_FIRES_LOCK = threading.Lock()


def _fires(schedule: Schedule) -> _Fires:
    key = (schedule.reset, schedule.starts_at, schedule.first_at_start)
    with _FIRES_LOCK:
        fires = _FIRES.get(key)
        if fires is None:
            if len(_FIRES) > 10_000:
                _FIRES.clear()
            fires = _FIRES[key] = _Fires(*key)
        return fires


def _period(schedule: Schedule, index: int, start: datetime, next_fire: datetime | None) -> Period | None:
    """Period `index` starting at `start`, cut by the next fire and the stop; None when the stop
    comes at or before its start."""
    stop = schedule.stop
    if stop is not None and stop <= start:
        return None
    end = start + timedelta(seconds=schedule.duration_s)
    for cut in (next_fire, stop):
        if cut is not None and cut < end:
            end = cut
    return Period(index, start, end, schedule.grace_s)


def period_number(schedule: Schedule, index: int) -> Period | None:
    """Period `index` (1-based), or None when there is no such period."""
    if index < 1:
        return None
    if not schedule.reset:
        return _period(schedule, 1, schedule.starts_at, None) if index == 1 else None
    fires = _fires(schedule)
    with fires.lock:
        fires.upto(count=index + 1)
        found = fires.found
        if len(found) < index:
            return None
        nxt = found[index] if len(found) > index else None
        return _period(schedule, index, found[index - 1], nxt)


def periods_started(schedule: Schedule, now: datetime) -> Iterator[Period]:
    """Every period that has started at `now` (or that holds it), oldest first, then the next one
    when it is upcoming."""
    index = 1
    while index <= MAX_PERIODS:
        period = period_number(schedule, index)
        if period is None:
            return
        yield period
        if period.starts_at > now:
            return
        index += 1


def period_holding(schedule: Schedule, moment: datetime) -> Period | None:
    """The period whose window [starts_at, ends_at) holds `moment`, if any."""
    if not schedule.reset:
        only = period_number(schedule, 1)
        return only if only is not None and only.contains(moment) else None
    fires = _fires(schedule)
    with fires.lock:
        fires.upto(until=moment)
        found = list(fires.found)
    index = _last_at_or_before(found, moment)
    if index is None:
        return None
    period = period_number(schedule, index)
    return period if period is not None and period.contains(moment) else None


def _last_at_or_before(found: list[datetime], moment: datetime) -> int | None:
    """The 1-based index of the last fire at or before `moment` (binary search)."""
    low, high = 0, len(found)
    while low < high:
        mid = (low + high) // 2
        if found[mid] <= moment:
            low = mid + 1
        else:
            high = mid
    return low or None


def period_next(schedule: Schedule, now: datetime) -> Period | None:
    """The first period that starts after `now`."""
    current = period_holding(schedule, now) or period_last_before(schedule, now)
    index = current.index + 1 if current is not None else 1
    period = period_number(schedule, index)
    return period if period is not None and period.starts_at > now else None


def period_last_before(schedule: Schedule, now: datetime) -> Period | None:
    """The last period that started at or before `now`."""
    if not schedule.reset:
        only = period_number(schedule, 1)
        return only if only is not None and only.starts_at <= now else None
    fires = _fires(schedule)
    with fires.lock:
        fires.upto(until=now)
        found = list(fires.found)
    index = _last_at_or_before(found, now)
    while index is not None and index >= 1:
        period = period_number(schedule, index)
        if period is not None:
            return period
        index -= 1  # cut off by the stop: an earlier one may still exist
    return None


def period_shown(schedule: Schedule, now: datetime) -> Period | None:
    """The period a tournament shows by default: the active one, else the next, else the last."""
    active = period_holding(schedule, now)
    if active is not None:
        return active
    return period_next(schedule, now) or period_last_before(schedule, now)


def period_to_enter(schedule: Schedule, now: datetime) -> Period | None:
    """Where a join goes: the active period, or between periods the next one; None after the last."""
    return period_holding(schedule, now) or period_next(schedule, now)


def first_period(schedule: Schedule) -> Period | None:
    return period_number(schedule, 1)


def periods_open(schedule: Schedule, now: datetime) -> list[Period]:
    """The periods that have started and are not final at `now` (active, or in their grace), newest
    first: the ones whose boards and counters still change."""
    found: list[Period] = []
    period = period_last_before(schedule, now)
    while period is not None and period.closes_at > now:
        found.append(period)
        period = period_number(schedule, period.index - 1) if period.index > 1 else None
    return found
