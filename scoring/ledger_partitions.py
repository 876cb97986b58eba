"""The ledger's monthly partitions: the events (`ScoreEvent`, by `played_at`) and the match claims
(`MatchSubmission`, by `played_month`, the first day of the month of the match's `played_at`).

Why by the month a result was played in: the day, week and season of a result come from its
`played_at`, so a season, a day board or a period reads the months of its window and no other;
a frozen season's months can be archived whole (archive.py); and a match sent again carries the
same `played_at`, so its claim is in the same partition as the first copy's, where the unique index
(game, match_id, played_month) finds it. That index is the idempotency guard: exact for every
match id whose month is kept. The same match id with a `played_at` in another month is another
claim (docs/api.md, "Idempotency and the ledger's months").

Partitions are created ahead (`partitions_ahead`, on beat every hour, LEDGER_PARTITIONS_AHEAD
months past the current one), and on demand for any month a batch needs that has none yet (a late
result of a month nobody played in: `partitions_ensure`, inside the batch's transaction). There is
no DEFAULT partition: a row always lands in its month's table, so a month can be detached,
archived and dropped without scanning anything else.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from seasons.models import Season

from .models import MatchSubmission, ScoreEvent

logger = logging.getLogger(__name__)

EVENTS = ScoreEvent._meta.db_table
CLAIMS = MatchSubmission._meta.db_table
# The partitions' creation, one process at a time (two creating the same month would collide in the
# catalog): a transaction-scoped advisory lock under this key.
_LOCK_KEY = "scoring.ledger_partitions"
# Months known to have both partitions, in this process: the batch's check is a set lookup.
_known: set[date] = set()


def month_of(moment: datetime | date) -> date:
    """The first day of the UTC month holding `moment`."""
    if isinstance(moment, datetime):
        moment = moment.astimezone(UTC)
    return date(moment.year, moment.month, 1)


def month_after(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def partition_name(table: str, month: date) -> str:
    return f"{table}_y{month.year:04d}m{month.month:02d}"


def month_bounds(month: date) -> tuple[datetime, datetime]:
    """The events partition's range: [first instant of the month, first instant of the next), UTC."""
    following = month_after(month)
    return (
        datetime(month.year, month.month, 1, tzinfo=UTC),
        datetime(following.year, following.month, 1, tzinfo=UTC),
    )


def _create_sql(month: date) -> list[str]:
    start, end = month_bounds(month)
    following = month_after(month)
    return [
        f"CREATE TABLE IF NOT EXISTS {partition_name(EVENTS, month)} PARTITION OF {EVENTS} "
        f"FOR VALUES FROM ('{start.isoformat()}') TO ('{end.isoformat()}')",
        f"CREATE TABLE IF NOT EXISTS {partition_name(CLAIMS, month)} PARTITION OF {CLAIMS} "
        f"FOR VALUES FROM ('{month.isoformat()}') TO ('{following.isoformat()}')",
    ]


def partitions_ensure(months: Iterable[date]) -> list[date]:
    """Both partitions of each month, created where missing, in the caller's transaction (the
    creation holds the parents' lock until it commits: rare, a month at a time). Returns the months
    created."""
    wanted = {month_of(m) for m in months} - _known
    if not wanted:
        return []
    created: list[date] = []
    names = {partition_name(table, month): month for month in wanted for table in (EVENTS, CLAIMS)}
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NULL", [list(names)])
        missing = sorted({names[row[0]] for row in cursor.fetchall()})
        if missing:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [_LOCK_KEY])
            for month in missing:
                for statement in _create_sql(month):
                    cursor.execute(statement)
                created.append(month)
                logger.info("ledger: partitions of %s created", month.strftime("%Y-%m"))
    # Known once committed (at once outside a transaction): a partition this transaction created, or
    # saw created by an earlier statement of its own, is gone again if it rolls back.
    transaction.on_commit(lambda: _known.update(wanted))
    return created


def months_spanned(first: datetime, last: datetime) -> list[date]:
    """The months from `first`'s to `last`'s, oldest first."""
    months, month = [], month_of(first)
    while month <= month_of(last):
        months.append(month)
        month = month_after(month)
    return months


def partitions_ensure_between(first: datetime, last: datetime) -> list[date]:
    """Both partitions of every month from `first`'s to `last`'s (bulk loads: seeds, benchmarks)."""
    with transaction.atomic():
        return partitions_ensure(months_spanned(first, last))


def partitions_ahead(*, now: datetime, months: int | None = None) -> list[date]:
    """The scheduled job: partitions from the current month through `months` past it (setting
    LEDGER_PARTITIONS_AHEAD), so a month's first result never waits for one."""
    ahead = settings.LEDGER_PARTITIONS_AHEAD if months is None else months
    wanted = [month_of(now)]
    for _ in range(ahead):
        wanted.append(month_after(wanted[-1]))
    with transaction.atomic():
        return partitions_ensure(wanted)


def played_window(seasons: Iterable[Season]) -> tuple[datetime, datetime]:
    """The `played_at` range that holds every result of `seasons`. Added to a query by season, it
    lets the planner leave out the months outside (a season's query reads its own months).

    A result's `played_at` was inside its season's window when it was taken (services.py,
    `_season_for`). Since then the window can only have grown, or its end moved to the moment
    `end_season` ran (seasons/admin.py refuses to move a started season's start later or its end
    before now), and no result was taken with a `played_at` more than PLAYED_AT_MAX_FUTURE_S after
    that moment: the end is widened by that much (and the second `end_season` truncates)."""
    chosen = list(seasons)
    if not chosen:
        return _EMPTY
    slack = timedelta(seconds=settings.PLAYED_AT_MAX_FUTURE_S + 1)
    return min(s.starts_at for s in chosen), max(s.ends_at for s in chosen) + slack


_EMPTY = (datetime(1970, 1, 1, tzinfo=UTC), datetime(1970, 1, 1, tzinfo=UTC))


def played_between(starts_at: datetime, ends_at: datetime) -> tuple[datetime, datetime]:
    """The `played_at` range holding every result a competition period counted: its window, the end
    widened as a season's is (`played_window`: a tournament ended early keeps the results taken
    before, played up to PLAYED_AT_MAX_FUTURE_S after that moment). As a query's constant bounds,
    the planner reads the period's months only."""
    return starts_at, ends_at + timedelta(seconds=settings.PLAYED_AT_MAX_FUTURE_S + 1)


def played_floor(seasons: Iterable[Season], *, accepted_since: datetime) -> datetime:
    """The earliest `played_at` of a result accepted since `accepted_since`: such a result's season
    was still accepting results then (not frozen before it), and began no later than its play."""
    starts = [s.starts_at for s in seasons if s.frozen_at is None or s.frozen_at >= accepted_since]
    return min(starts) if starts else accepted_since


def partitions_forget_local() -> None:
    """Forget the months this process knew (a test that drops partitions, an archive)."""
    _known.clear()


@dataclass(frozen=True)
class LedgerPartition:
    table: str  # the parent: EVENTS or CLAIMS
    name: str
    month: date
    rows_estimate: int
    bytes: int


def partitions_list() -> list[LedgerPartition]:
    """Every attached partition of the two ledger tables, oldest month first (sizes from the
    catalog's estimates: no scan)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT parent.relname, child.relname, greatest(child.reltuples, 0)::bigint, "
            "pg_total_relation_size(child.oid) FROM pg_inherits i "
            "JOIN pg_class parent ON parent.oid = i.inhparent JOIN pg_class child ON child.oid = i.inhrelid "
            "WHERE parent.relname = ANY(%s) ORDER BY child.relname",
            [[EVENTS, CLAIMS]],
        )
        rows = cursor.fetchall()
    found = []
    for parent, name, rows_estimate, size in rows:
        suffix = name.rsplit("_y", 1)[-1]  # 2026m12
        month = date(int(suffix[:4]), int(suffix[5:7]), 1)
        found.append(LedgerPartition(parent, name, month, int(rows_estimate), int(size)))
    return sorted(found, key=lambda p: (p.month, p.table))


def months_ahead(*, now: datetime) -> int:
    """How many whole months past the current one have their partitions (the `ledger_partitions`
    gauge: an alert below 1 means the scheduled job has not run)."""
    found = partitions_list()
    months = {p.month for p in found if p.table == EVENTS} & {p.month for p in found if p.table == CLAIMS}
    current, ahead = month_after(month_of(now)), 0
    while current in months:
        ahead, current = ahead + 1, month_after(current)
    return ahead
