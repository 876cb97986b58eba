"""Periods in UTC: labels, ISO weeks across the year boundary, stepping, malformed labels."""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from seasons.periods import DAY, MONTH, WEEK, BadPeriod


def test_labels_come_from_the_utc_day_of_a_moment():
    late = datetime(2027, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=2)))  # 2026-12-31 22:30 UTC
    assert (DAY.label(late), WEEK.label(late), MONTH.label(late)) == ("2026-12-31", "2026-W53", "2026-12")
    assert WEEK.label(date(2027, 1, 1)) == "2026-W53" and WEEK.label(date(2027, 1, 4)) == "2027-W01"


@pytest.mark.parametrize(
    ("period", "label", "steps", "expected"),
    [
        (DAY, "2026-12-31", 1, "2027-01-01"),
        (DAY, "2024-03-01", -1, "2024-02-29"),
        (WEEK, "2026-W53", 1, "2027-W01"),
        (WEEK, "2027-W01", -1, "2026-W53"),
        (WEEK, "2026-W01", -1, "2025-W52"),
        (MONTH, "2026-12", 1, "2027-01"),
        (MONTH, "2026-01", -13, "2024-12"),
    ],
)
def test_stepping_whole_periods(period, label, steps, expected):
    assert period.shift(label, steps) == expected
    assert period.shift(expected, -steps) == label


@pytest.mark.parametrize(
    ("period", "label"),
    [(DAY, "2026-13-01"), (DAY, "2026-02-30"), (WEEK, "2026-W54"), (WEEK, "2025-W53"), (MONTH, "2026-13"), (DAY, "x")],
)
def test_malformed_labels_are_bad_periods(period, label):
    with pytest.raises(BadPeriod):
        period.check(label)


def test_every_day_of_a_week_is_in_it():
    first = WEEK.start("2026-W53")
    assert first == date(2026, 12, 28) and first.weekday() == 0
    assert {WEEK.label(datetime(2026, 12, 28, tzinfo=UTC) + timedelta(days=i)) for i in range(7)} == {"2026-W53"}


def test_a_month_of_year_zero_is_a_bad_period_not_a_crash():
    with pytest.raises(BadPeriod):
        MONTH.check("0000-01")


@pytest.mark.django_db
def test_sql_labels_are_the_python_labels_over_years_of_days():
    from django.db import connection

    first, last = date(2019, 1, 1), date(2032, 12, 31)
    labels = ", ".join(p.sql_label("d::date") for p in (DAY, WEEK, MONTH))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT d::date, {labels} FROM generate_series(%s::date, %s::date, interval '1 day') AS d", [first, last]
        )
        rows = cursor.fetchall()
    assert len(rows) == (last - first).days + 1
    for day, *sql in rows:
        assert sql == [DAY.label(day), WEEK.label(day), MONTH.label(day)], day
