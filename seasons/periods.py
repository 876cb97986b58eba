"""Period arithmetic in UTC: the day and ISO week of `played_at`, and their labels."""

import re
from datetime import UTC, date, datetime, timedelta

DAY_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
WEEK_RE = re.compile(r"^(\d{4})-W(\d{2})$")
MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")


class BadPeriod(ValueError):
    pass


def day_label(moment: datetime) -> str:
    return moment.astimezone(UTC).date().isoformat()


def week_label(moment: datetime) -> str:
    """ISO 8601 week, e.g. 2026-12-31 -> '2026-W53', 2027-01-04 -> '2027-W01'."""
    iso = moment.astimezone(UTC).date().isocalendar()
    return f"{iso.year}-W{iso.week:02d}"


def month_label(moment: datetime) -> str:
    d = moment.astimezone(UTC).date()
    return f"{d.year}-{d.month:02d}"


def parse_day(label: str) -> date:
    if not DAY_RE.match(label):
        raise BadPeriod("a day period is YYYY-MM-DD")
    try:
        return date.fromisoformat(label)
    except ValueError as exc:
        raise BadPeriod(f"{label} is not a calendar day") from exc


def parse_week(label: str) -> tuple[int, int]:
    match = WEEK_RE.match(label)
    if not match:
        raise BadPeriod("a week period is YYYY-Www, e.g. 2026-W42")
    year, week = int(match.group(1)), int(match.group(2))
    try:
        date.fromisocalendar(year, week, 1)
    except ValueError as exc:
        raise BadPeriod(f"{label} is not an ISO week") from exc
    return year, week


def parse_month(label: str) -> tuple[int, int]:
    match = MONTH_RE.match(label)
    if not match or not 1 <= int(match.group(2)) <= 12:
        raise BadPeriod("a month period is YYYY-MM, e.g. 2026-10")
    return int(match.group(1)), int(match.group(2))


def week_start(label: str) -> date:
    year, week = parse_week(label)
    return date.fromisocalendar(year, week, 1)


def day_bounds(label: str) -> tuple[datetime, datetime]:
    day = parse_day(label)
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return start, start + timedelta(days=1)
