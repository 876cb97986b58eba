"""Bulk SQL helpers: rows go to PostgreSQL with COPY, never as thousands of placeholders.

COPY is the cheapest way in, on both sides: psycopg writes each row in C, and the server parses no
statement. Measured for 500 rows: 2.4 ms by COPY, 12-14 ms as `unnest` array parameters (psycopg
quotes every array element in Python), far more with the ORM's `bulk_create`.

- `copy_rows`: COPY straight into a table (new rows that cannot conflict), in text or binary.
- `insert_rows`, `insert_rows_returning`: rows that may conflict (ON CONFLICT): one INSERT ...
  SELECT from `json_to_recordset` of one JSON parameter (orjson writes it in C), in a given order
  (the lock order). Only the rows a caller must look at come back (a count, or RETURNING filtered
  by a condition). Measured for 500 rows with their commit: 5.8 ms, against 8.4 ms by COPY into
  a temporary staging table (whose ON COMMIT truncation also cost every commit a file operation
  per table: a single-row transaction waited on IO:DataFileTruncate).
- `ids_take`: ids from a table's own sequence, to COPY rows whose ids the caller needs.
- `rows_by_keys`: the rows of a batch's keys (players, match ids), one index probe per key.
- `models_where`, `model_columns`, `models_from_rows`: model instances from a fixed SQL statement
  (one table's `models_where`, or a join's own statement read by the other two), for the reads
  that run on every request of a hot path. The ORM compiles a queryset anew each time it runs it:
  under single-result POSTs, the three small reads of each group (the keys with their games, the
  game's seasons, its rules) were 29% of the web process's CPU, most of it `SQLCompiler`, not
  PostgreSQL. The rows become models as the ORM makes them (`Model.from_db`, the same converters).

The helpers that reach psycopg's own cursor (for COPY, and to skip Django's parameter handling)
do so inside `connection.wrap_database_errors`, as Django's cursor does: a psycopg error comes out
as Django's (`OperationalError` for a ledger that went away, answered 503 `ledger_unavailable`;
`IntegrityError` with the psycopg error as its cause), and the connection is marked for the
health check before its reuse.

Why `rows_by_keys` and not `WHERE game_id = %s AND player_id = ANY(%s)`: the planner costs that
by its statistics of `game_id`, and for a game newer than the last ANALYZE (autovacuum may be
slow, or off) it expects one row, so it scans every row of the game and filters the array
(measured: 890 ms for 500 keys in a game of 72,000 players, growing with the game). A LATERAL
probe per key has one plan whatever the statistics say (5 ms); its LIMIT 1 (the key is unique)
keeps the planner from flattening it back into a join it would cost by the same statistics.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)


def copy_rows(table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, binary: bool = False) -> int:
    """COPY rows into a table; returns how many.

    `binary`: COPY's binary format, each column written by the dumper of its own type (read from
    the catalog once per process), not chosen anew for each value by its Python type; a jsonb
    column's value is then `jsonb_binary(value)`. Measured for 500 ledger rows (16 columns):
    3.4 ms of this process's CPU against 8.2 ms in text.
    """
    count = 0
    with connection.cursor() as cursor, connection.wrap_database_errors:
        raw = cursor.cursor
        statement = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
        if binary:
            types = _copy_types(raw, table, tuple(columns))
            statement += " (FORMAT BINARY)"
        with raw.copy(statement) as copy:
            if binary:
                copy.set_types(types)
            for row in rows:
                copy.write_row(row)
                count += 1
    return count


def jsonb_binary(value: Any) -> bytes:
    """A jsonb column's value for `copy_rows(binary=True)`: jsonb's binary form (version 1, then
    the JSON text), written by orjson."""
    return b"\x01" + orjson.dumps(value)


_copy_column_types: dict[tuple[str, tuple[str, ...]], list[int]] = {}


def _copy_types(raw: Any, table: str, columns: tuple[str, ...]) -> list[int]:
    """The type oids of `columns` of `table`, jsonb's as bytea (its values come as `jsonb_binary`
    bytes, which bytea's dumper sends as they are)."""
    found = _copy_column_types.get((table, columns))
    if found is None:
        raw.execute(
            "SELECT attname, CASE WHEN atttypid = 'jsonb'::regtype THEN 'bytea'::regtype ELSE atttypid END::oid "
            "FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
            [table],
        )
        oids = dict(raw.fetchall())
        found = _copy_column_types[(table, columns)] = [int(oids[column]) for column in columns]
    return found


_sequences: dict[str, str] = {}


def ids_take(table: str, count: int) -> list[int]:
    """`count` new ids from the table's id sequence (in one round trip). The sequence's name is
    looked up once per process: `pg_get_serial_sequence` in the statement would run once per row
    (a catalog lookup each: 4.6 ms for 500 ids, against 0.9 ms by name)."""
    if count == 0:
        return []
    with connection.cursor() as cursor:
        sequence = _sequences.get(table)
        if sequence is None:
            cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
            sequence = _sequences[table] = str(cursor.fetchone()[0])
        cursor.execute("SELECT nextval(%s::regclass) FROM generate_series(1, %s)", [sequence, count])
        return [int(row[0]) for row in cursor.fetchall()]


def rows_by_keys(
    table: str,
    columns: Sequence[str],
    *,
    equal: Mapping[str, Any],
    key: str,
    key_type: str,
    keys: Iterable[Any],
) -> list[tuple[Any, ...]]:
    """The rows of `table` whose `key` column is one of `keys` and whose `equal` columns hold
    those values; `columns` of each, in no particular order. `key_type` is the key's PostgreSQL
    type (`text`, `uuid`); no key may contain a comma. Needs a unique index on (the `equal`
    columns, `key`)."""
    wanted = list(dict.fromkeys(str(k) for k in keys))
    if not wanted:
        return []
    # The keys travel as one comma-joined string: quoting a 500-element array parameter
    # client-side costs more than the lookup itself. Keys never hold a comma (player ids, UUIDs).
    joined = ",".join(wanted)
    if joined.count(",") != len(wanted) - 1:
        raise ValueError("rows_by_keys: a key holds a comma")
    conditions = " AND ".join([*(f"t.{column} = %s" for column in equal), f"t.{key} = k.v"])
    sql = (
        f"SELECT {', '.join(f'found.{c}' for c in columns)} "
        f"FROM unnest(string_to_array(%s, ',')::{key_type}[]) AS k(v) "
        f"CROSS JOIN LATERAL (SELECT {', '.join(f't.{c}' for c in columns)} FROM {table} t "
        f"WHERE {conditions} LIMIT 1) AS found"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [joined, *equal.values()])
        return list(cursor.fetchall())


# Many bigint ids as one query parameter: `... WHERE id = ANY(ID_ARRAY)` with `id_list(ids)`. psycopg
# would quote a 2,000-element list element by element in Python, and a query of 2,000 placeholders
# is split anew at each execution (too long for its cache) and costs PostgreSQL 2-3 ms to plan (the
# array: 0.6 ms).
ID_ARRAY = "string_to_array(%s, ',')::bigint[]"


def id_list(ids: Iterable[int]) -> str:
    """The ids as the one parameter `ID_ARRAY` reads."""
    return ",".join(map(str, ids))


def insert_rows(
    table: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[Sequence[Any]],
    *,
    order_by: str = "",
    on_conflict: str = "",
) -> int:
    """INSERT the rows (in `order_by` order) [on_conflict]; returns how many rows the INSERT wrote
    (fewer than given when some conflicted).

    `columns` is [(name, postgres type)], `rows` tuples in that order (values orjson can write:
    a dict for a jsonb column).
    """
    with connection.cursor() as cursor, connection.wrap_database_errors:
        raw = _insert(cursor.cursor, table, columns, rows, order_by=order_by, on_conflict=on_conflict)
        return int(raw.rowcount) if raw is not None else 0


def insert_rows_returning(
    table: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[Sequence[Any]],
    *,
    returning: str,
    where: str = "",
    order_by: str = "",
    on_conflict: str = "",
) -> list[tuple[Any, ...]]:
    """`insert_rows`, answering the `returning` columns of the rows written, only those that
    match `where` when given (an SQL condition on the returned columns): the rare rows a caller
    must look at, without the others crossing the wire."""
    if where:
        returning_sql = f"RETURNING {returning}) SELECT {returning} FROM written WHERE {where}"
    else:
        returning_sql = f"RETURNING {returning}"
    with connection.cursor() as cursor, connection.wrap_database_errors:
        raw = _insert(
            cursor.cursor,
            table,
            columns,
            rows,
            order_by=order_by,
            on_conflict=on_conflict,
            returning_sql=returning_sql,
            wrap=bool(where),
        )
        return list(raw.fetchall()) if raw is not None else []


def _insert(
    raw: Any,
    table: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[Sequence[Any]],
    *,
    order_by: str,
    on_conflict: str,
    returning_sql: str = "",
    wrap: bool = False,
) -> Any:
    if not rows:
        return None
    names = [name for name, _ in columns]
    definition = ", ".join(f"{name} {pg_type}" for name, pg_type in columns)
    order = f" ORDER BY {order_by}" if order_by else ""
    insert = (
        f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(names)} "
        f"FROM json_to_recordset(%s::json) AS staged({definition}){order} {on_conflict} {returning_sql}"
    )
    if wrap:  # the returned rows filtered: `returning_sql` closes the `written` CTE
        insert = f"WITH written AS ({insert}"
    raw.execute(insert, [orjson.dumps([dict(zip(names, row, strict=True)) for row in rows]).decode()])
    return raw


@dataclass(frozen=True)
class _Shape:
    columns: str  # "alias.col, alias.col, ..." in the model's concrete field order
    attnames: list[str]
    converters: list[tuple[int, list[Callable[..., Any]], Any]]  # (position, converters, expression)


_shapes: dict[tuple[type[Model], str], _Shape] = {}


def _shape(model: type[Model], alias: str) -> _Shape:
    shape = _shapes.get((model, alias))
    if shape is None:
        fields = model._meta.concrete_fields
        converters = []
        for i, field in enumerate(fields):
            col = field.get_col(alias)
            found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            if found:
                converters.append((i, found, col))
        shape = _shapes[(model, alias)] = _Shape(
            columns=", ".join(f"{alias}.{connection.ops.quote_name(f.column)}" for f in fields),
            attnames=[f.attname for f in fields],
            converters=converters,
        )
    return shape


def model_columns(model: type[Model], alias: str) -> tuple[str, int]:
    """The SELECT list of a model's columns (table alias `alias`), in the order `models_from_rows`
    reads them, and how many there are."""
    shape = _shape(model, alias)
    return shape.columns, len(shape.attnames)


def models_where(model: type[M], where: str, params: Sequence[Any], *, order_by: str = "") -> list[M]:
    """Instances of `model` whose rows match `where` (SQL on table alias `t`), in `order_by` order."""
    columns, _ = model_columns(model, "t")
    order = f" ORDER BY {order_by}" if order_by else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {model._meta.db_table} t WHERE {where}{order}", params)
        return models_from_rows(model, cursor.fetchall(), alias="t")


def models_from_rows(model: type[M], rows: Iterable[Sequence[Any]], *, alias: str, offset: int = 0) -> list[M]:
    """Instances of `model` from rows whose columns `offset` .. offset + n are `model_columns(model,
    alias)`, as the ORM would build them."""
    shape = _shape(model, alias)
    end = offset + len(shape.attnames)
    found = []
    for row in rows:
        values = list(row[offset:end])
        for i, converters, expression in shape.converters:
            for converter in converters:
                values[i] = converter(values[i], expression, connection)
        found.append(model.from_db(connection.alias, shape.attnames, values))
    return found


ANALYZE_CHANGES_MIN = 1000  # rows changed since a table's last ANALYZE before `statistics_refresh` looks at it
ANALYZE_SHARE = 0.2  # ... and this share of its live rows (autovacuum's default: 50 rows and 0.1)
ANALYZE_TABLES_MAX = 4  # tables one call analyzes at most (the rest wait for the next call)
ANALYZE_AGAIN_AFTER_S = 60.0  # a table analyzed is not looked at again for this long


def statistics_refresh(
    *,
    changes_min: int = ANALYZE_CHANGES_MIN,
    share: float = ANALYZE_SHARE,
    again_after_s: float = ANALYZE_AGAIN_AFTER_S,
    most: int = ANALYZE_TABLES_MAX,
) -> list[str]:
    """ANALYZE the tables (a ledger month's partition is one; the partitioned parents are left out)
    whose rows changed by more than `changes_min` and `share` of their live rows since their last
    ANALYZE, none more often than every `again_after_s` (the outbox changes all the time); returns
    the tables analyzed, the most changed first. Only the tables the connection's role may analyze
    (its own: PostgreSQL would skip another's with a warning, and the next sweep would try again).
    Autovacuum does this where it runs (from 50 rows and a tenth of the table: it comes first);
    this does it where nobody does (a database with autovacuum off, as on the benchmark machine),
    with the relay's sweep, as `outbox_vacuum` does the outbox's VACUUM.

    Without statistics the planner takes one value in 200 of a column to match any key, so a
    lookup of a task's 500 event ids in a table of the competitions' results (a unique key that
    starts with the event id) was costed as reading the whole table, and read it: one sequential
    scan a task, 37 ms at 400,000 rows and growing with the table, against 4-7 ms by the index
    once analyzed (docs/performance.md, "Leagues: ingest"). ANALYZE reads a sample (30,000 rows at
    the default statistics target: 80 ms for that table) and takes no lock that reading or writing
    rows waits for. Not inside a transaction (its lock would be held until the end)."""
    if connection.in_atomic_block:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT schemaname, relname FROM pg_stat_user_tables "
            "WHERE n_mod_since_analyze >= greatest(%s, %s * n_live_tup) "
            "AND coalesce(greatest(last_analyze, last_autoanalyze), '-infinity') < now() - %s * interval '1 second' "
            "AND relid IN (SELECT oid FROM pg_class WHERE relkind = 'r' AND pg_has_role(relowner, 'USAGE')) "
            "ORDER BY n_mod_since_analyze DESC LIMIT %s",
            [changes_min, share, again_after_s, most],
        )
        stale = cursor.fetchall()
        for schema, table in stale:
            cursor.execute(f'ANALYZE "{schema}"."{table}"')
    return [table for _, table in stale]
