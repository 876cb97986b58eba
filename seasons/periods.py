"""Period arithmetic in UTC: the day, ISO week and month of a moment, their labels, and stepping.

`DAY`, `WEEK` and `MONTH` are the one place a period's label is made, checked or moved; the board
kinds (boards/kinds.py) and the board page take them from here, never redo the arithmetic. The
label is also given as SQL (`Period.sql_label`, the same text from a `date` column) for the
ledger's queries that group results by period; tests compare the two over years of days.
"""

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

DAY_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
WEEK_RE = re.compile(r"^(\d{4})-W(\d{2})$")
MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")

# PostgreSQL's to_char patterns giving `label` from a date: ISO year and week for weeks.
SQL_LABEL_FORMATS = {"day": "YYYY-MM-DD", "week": 'IYYY-"W"IW', "month": "YYYY-MM"}


class BadPeriod(ValueError):
    pass


def utc_date(moment: date | datetime) -> date:
    """The UTC calendar day of a moment (a date is taken as it is)."""
    if isinstance(moment, datetime):
        return moment.astimezone(UTC).date()
    return moment


def day_label(moment: date | datetime) -> str:
    return utc_date(moment).isoformat()


def week_label(moment: date | datetime) -> str:
    """ISO 8601 week, e.g. 2026-12-31 -> '2026-W53', 2027-01-04 -> '2027-W01'."""
    iso = utc_date(moment).isocalendar()
    return f"{iso.year}-W{iso.week:02d}"


def month_label(moment: date | datetime) -> str:
    d = utc_date(moment)
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


def month_start(label: str) -> date:
    year, month = parse_month(label)
    try:
        return date(year, month, 1)
    except ValueError as exc:  # year 0
        raise BadPeriod(f"{label} is not a calendar month") from exc


@dataclass(frozen=True)
class Period:
    """A kind of period: `label` names the one holding a moment, `start` is its first day (and
    raises BadPeriod for a malformed label), `shift` steps whole periods."""

    name: str
    example: str

    def label(self, moment: date | datetime) -> str:
        if self.name == "day":
            return day_label(moment)
        if self.name == "week":
            return week_label(moment)
        return month_label(moment)

    def sql_label(self, column: str) -> str:
        """SQL giving the label of the period holding a `date` column's day (PostgreSQL), the
        same text as `label` (years 1000-9999)."""
        return f"to_char({column}, '{SQL_LABEL_FORMATS[self.name]}')"

    def start(self, label: str) -> date:
        if self.name == "day":
            return parse_day(label)
        if self.name == "week":
            return week_start(label)
        return month_start(label)

    def check(self, label: str) -> str:
        self.start(label)
        return label

    def schema(self) -> dict[str, str]:
        """The JSON Schema of a label (OpenAPI): every label it admits is one `check` accepts. A
        day is any calendar date (years 1000-9999); a week 01-52 of any such year, or week 53 of the
        years 1900-2100 that have one; a month 01-12 of any such year."""
        if self.name == "day":
            return {"type": "string", "format": "date", "pattern": r"^[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}$"}
        if self.name == "week":
            long_years = "|".join(str(y) for y in range(1900, 2101) if date(y, 12, 28).isocalendar()[1] == 53)
            return {"type": "string", "pattern": rf"^([1-9][0-9]{{3}}-W(0[1-9]|[1-4][0-9]|5[0-2])|({long_years})-W53)$"}
        return {"type": "string", "pattern": r"^[1-9][0-9]{3}-(0[1-9]|1[0-2])$"}

    def shift(self, label: str, steps: int) -> str:
        first = self.start(label)
        if self.name == "day":
            return day_label(first + timedelta(days=steps))
        if self.name == "week":
            return week_label(first + timedelta(weeks=steps))
        months = first.year * 12 + first.month - 1 + steps
        return month_label(date(months // 12, months % 12 + 1, 1))


DAY = Period("day", "2026-10-13")
WEEK = Period("week", "2026-W42")
MONTH = Period("month", "2026-10")
