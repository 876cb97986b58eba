"""The bulk SQL helpers against the real PostgreSQL: conflicts, counts, filtered returns, and a
connection that goes on after a rolled-back transaction."""

import os

import psycopg
import pytest
from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction

from common.api_errors import ledger_unreachable
from common.db import (
    copy_rows,
    ids_take,
    insert_rows,
    insert_rows_returning,
    jsonb_binary,
    rows_by_keys,
    statistics_refresh,
)

pytestmark = pytest.mark.django_db(transaction=True)

COLUMNS = [("slug", "text"), ("note", "text")]


@pytest.fixture
def scratch_table():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE scratch_rows (id bigserial PRIMARY KEY, slug text UNIQUE, note text)")
    yield "scratch_rows"
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE scratch_rows")


def _insert(table: str, rows: list[tuple[str, str]]) -> list[tuple]:
    return insert_rows_returning(
        table, COLUMNS, rows, order_by="slug", on_conflict="ON CONFLICT (slug) DO NOTHING", returning="slug"
    )


def test_insert_rows_returns_only_the_rows_that_did_not_conflict(scratch_table):
    with transaction.atomic():
        assert _insert(scratch_table, [("b", "1"), ("a", "1")]) == [("a",), ("b",)]
    with transaction.atomic():
        assert _insert(scratch_table, [("b", "2"), ("c", "2")]) == [("c",)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT slug, note FROM scratch_rows ORDER BY slug")
        assert cursor.fetchall() == [("a", "1"), ("b", "1"), ("c", "2")]


def test_insert_rows_counts_what_it_wrote_and_returning_can_filter(scratch_table):
    upsert = "ON CONFLICT (slug) DO UPDATE SET note = scratch_rows.note || EXCLUDED.note"
    with transaction.atomic():
        assert insert_rows(scratch_table, COLUMNS, [("a", "1"), ("b", "1")], on_conflict="ON CONFLICT DO NOTHING") == 2
        assert insert_rows(scratch_table, COLUMNS, [("a", "1"), ("c", "1")], on_conflict="ON CONFLICT DO NOTHING") == 1
        long_notes = insert_rows_returning(
            scratch_table,
            COLUMNS,
            [("a", "2"), ("b", "2"), ("d", "2")],
            order_by="slug",
            on_conflict=upsert,
            returning="slug, note",
            where="length(note) > 1",
        )
    assert sorted(long_notes) == [("a", "12"), ("b", "12")]


def test_a_rolled_back_insert_leaves_the_connection_working(scratch_table):
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        _insert(scratch_table, [("a", "first")])
        raise ZeroDivisionError
    with transaction.atomic():
        assert _insert(scratch_table, [("a", "second")]) == [("a",)]


def test_copy_rows_with_ids_taken_from_the_sequence(scratch_table):
    ids = ids_take(scratch_table, 3)
    assert len(set(ids)) == 3
    assert copy_rows(scratch_table, ["id", "slug", "note"], [(i, f"s{i}", "") for i in ids]) == 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM scratch_rows ORDER BY id")
        assert [row[0] for row in cursor.fetchall()] == sorted(ids)


def test_binary_copy_writes_each_column_by_its_own_type():
    """Small and large ints into smallint/int/bigint columns, a NULL, a jsonb document, a
    timestamptz and a uuid: binary COPY picks each column's dumper, not the value's."""
    import uuid
    from datetime import UTC, datetime

    moment = datetime(2026, 12, 2, 15, 30, 0, 123456, tzinfo=UTC)
    match_id = uuid.uuid4()
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMPORARY TABLE scratch_typed (a smallint, b integer, c bigint, d varchar(8), e jsonb,"
            " f timestamptz, g uuid, h date)"
        )
        rows = [
            (1, 2, 3, "x", jsonb_binary({"k": ["é", 1]}), moment, match_id, moment.date()),
            (-5, 70_000, 2**40, None, jsonb_binary([]), moment, match_id, moment.date()),
        ]
        assert copy_rows("scratch_typed", ["a", "b", "c", "d", "e", "f", "g", "h"], rows, binary=True) == 2
        cursor.execute("SELECT a, b, c, d, e::text, f, g, h FROM scratch_typed ORDER BY a")
        assert cursor.fetchall() == [
            (-5, 70_000, 2**40, None, "[]", moment, match_id, moment.date()),
            (1, 2, 3, "x", '{"k": ["é", 1]}', moment, match_id, moment.date()),
        ]
        cursor.execute("DROP TABLE scratch_typed")


def test_rows_by_keys_finds_each_key_once_and_skips_the_missing(scratch_table):
    copy_rows(scratch_table, ["slug", "note"], [("a", "x"), ("b", "y"), ("c", "x")])
    found = rows_by_keys(
        scratch_table,
        ["slug", "note"],
        equal={"note": "x"},
        key="slug",
        key_type="text",
        keys=["a", "a", "b", "c", "z"],
    )
    assert sorted(found) == [("a", "x"), ("c", "x")]
    assert rows_by_keys(scratch_table, ["slug"], equal={}, key="slug", key_type="text", keys=[]) == []


def test_copy_and_insert_errors_come_out_as_djangos(scratch_table):
    """psycopg's own cursor behind COPY and the INSERTs: its errors still reach the callers (and
    the API's 503 `ledger_unavailable`) as Django's, with psycopg's as the cause."""
    copy_rows(scratch_table, ["slug", "note"], [("a", "x")])
    with pytest.raises(IntegrityError) as duplicate, transaction.atomic():
        copy_rows(scratch_table, ["slug", "note"], [("a", "y")])
    assert isinstance(duplicate.value.__cause__, psycopg.errors.UniqueViolation)
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_rows(scratch_table, COLUMNS, [("a", "z")])

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    with psycopg.connect(_dsn(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    with pytest.raises(OperationalError) as gone:
        copy_rows(scratch_table, ["slug", "note"], [("b", "x")])
    assert ledger_unreachable(gone.value)
    connection.close()  # the next use opens a fresh connection


def _dsn() -> str:
    s = connection.settings_dict
    return psycopg.conninfo.make_conninfo(
        dbname=s["NAME"], user=s["USER"] or None, host=s["HOST"] or None, port=s["PORT"] or None
    )


def _counters_flushed() -> None:
    """This connection's row counts in pg_stat_user_tables now, not within a second."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT 1")


def _plan(sql: str, params: list) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.fixture
def results_table():
    """A table shaped as the competitions' results (a unique key that starts with the event id),
    200,000 rows, never analyzed."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE scratch_results (id bigserial PRIMARY KEY, event_id bigint NOT NULL, "
            "league_id bigint NOT NULL, number integer, UNIQUE (event_id, league_id))"
        )
    try:
        copy_rows("scratch_results", ["event_id", "league_id", "number"], ((i, 1, i % 30) for i in range(200_000)))
        _counters_flushed()
        yield "scratch_results"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE scratch_results")


RESULTS_LOOKUP = (
    "SELECT league_id, number, event_id FROM scratch_results "
    "WHERE event_id = ANY(string_to_array(%s, ',')::bigint[]) AND number IS NOT NULL"
)


def test_statistics_refresh_analyzes_a_table_nothing_analyzed_and_its_key_lookups_use_the_index(results_table):
    """Never analyzed, a lookup of 500 event ids is costed as reading the whole table (one value in
    200 matches, without statistics) until `statistics_refresh` analyzes it."""
    ids = [",".join(str(i) for i in range(0, 200_000, 400))]
    assert "Seq Scan" in _plan(RESULTS_LOOKUP, ids)
    analyzed = statistics_refresh(most=1000)
    assert "scratch_results" in analyzed
    plan = _plan(RESULTS_LOOKUP, ids)
    assert "Seq Scan" not in plan and "scratch_results_event_id_league_id_key" in plan, plan
    assert "scratch_results" not in statistics_refresh(most=1000)  # analyzed, unchanged since


def test_the_sessions_price_random_reads_for_a_cache_so_a_task_of_2000_ids_reads_by_the_index(results_table):
    """An apply task's lookup (2,000 consecutive event ids) in an analyzed table of 200,000 rows: at
    PostgreSQL's default price of a page read out of order (4) the planner reads the whole table
    (a parallel scan, 20-30 ms on the benchmark's database); at the service's (settings
    DATABASE_RANDOM_PAGE_COST, 1.1) it reads by the unique index."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE scratch_results")
        cursor.execute("SHOW random_page_cost")
        assert cursor.fetchone()[0] == settings.DATABASE_RANDOM_PAGE_COST == "1.1"
    ids = [",".join(str(i) for i in range(100_000, 102_000))]
    plan = _plan(RESULTS_LOOKUP, ids)
    assert "Seq Scan" not in plan and "scratch_results_event_id_league_id_key" in plan, plan
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL random_page_cost = 4")
        assert "Seq Scan" in _plan(RESULTS_LOOKUP, ids)


def test_statistics_refresh_leaves_the_tables_of_other_roles_alone():
    """A role that may not analyze a table (not its owner) does not pick it, sweep after sweep."""
    role = f"scratch_analyst_{os.getpid()}"
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE scratch_others (id bigserial PRIMARY KEY, n integer)")
        cursor.execute(f"CREATE ROLE {role} NOLOGIN")
    try:
        copy_rows("scratch_others", ["n"], ((i,) for i in range(5_000)))
        _counters_flushed()
        with connection.cursor() as cursor:
            cursor.execute(f"SET ROLE {role}")
        try:
            assert "scratch_others" not in statistics_refresh(most=1000)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET ROLE")
        assert "scratch_others" in statistics_refresh(most=1000)  # its owner's (the test's) role may
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE scratch_others")
            cursor.execute(f"DROP ROLE {role}")


def test_statistics_refresh_does_nothing_inside_a_transaction():
    with transaction.atomic():
        assert statistics_refresh() == []
