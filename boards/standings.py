"""Final standings: a frozen season's boards, kept in PostgreSQL for good.

The freeze that decides what they are lives with the ledger (scoring/freezing.py), since the ledger
is the truth and old day and week boards have left Redis by then. It writes them with
`standings_load`: the ledger's SQL for each board kind, ranked by window functions inside
PostgreSQL (no row through Python), into a table of the season's own that is indexed after the
load and attached as the season's partition of FrozenStanding (the table is partitioned by season,
migration 0007). `standings_store` writes boards handed over in display order (COPY; positions and
ranks counted as the rows go by, ranking.py) through the parent table, into its DEFAULT partition.
Once stored and committed, the season's keys get an expiry (`season_keys_expire`);
`season_archive` drops what is left of them. Reads of a frozen season come from these rows
(selectors.py).
"""

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, NoReturn

import psycopg
from django.conf import settings
from django.db import IntegrityError, connection, transaction

from common.db import copy_rows
from common.redis import boards_client
from seasons.models import Season
from seasons.services import season_mark_archived

from . import keys
from .codec import ScoreCodec, ScoreOverflow
from .models import FrozenStanding
from .ranking import Ranker, sql_rank
from .tally import BoardEntry

logger = logging.getLogger(__name__)

# What PostgreSQL may use to sort a freeze's rows into each index it builds (server memory, for
# the length of one CREATE INDEX).
INDEX_WORK_MEM = "256MB"
# The bigint that tells a query's boards apart in its window functions (`_ranked_sql`): a hash of
# the kind, region and period, checked row by row.
BOARD_HASH = "hashtextextended(b.board, hashtextextended(b.region, hashtextextended(b.period, 0)))"
# How soon the backend of a freeze's own connection notices that the freeze's process has gone.
HELPER_CHECK_INTERVAL = "1s"
# The temporary table each of those connections ranks a query into before copying it (`_rank_task`),
# and how many boards' row ranges one INSERT copies from it.
RANKED = "pg_temp.standings_ranked"
COPY_RANGES = 100
# How many connections of its own a freeze ranks a season's standings on, when its transaction is
# the outermost (`standings_load`). Three on two cores: five queries of about the same length
# taken two at a time run in three rounds, the last on one core; taken three at a time, three share
# the two cores, then two (measured: four were slower, 79 s against 71-75 s for the five).
LOAD_CONNECTIONS = 3
STANDING_COLUMNS = ["season_id", "board", "region", "period", "position", "rank", "player_id", "score"]


class OutOfOrder(ValueError):
    """Standings were handed a board's members out of display order: their ranks would be wrong."""


def standings_store(*, season: Season, entries: Iterable[Sequence[BoardEntry]]) -> int:
    """Write the final standings of the season's boards and return the number of rows.

    `entries` streams every board's members in chunks, board after board, each board in display
    order: score descending, then player id by code point (`ledger_entries(ordered=True)`, or
    `tally.board_entries` for boards in memory); each chunk is one COPY. Call inside the
    transaction that marks the season frozen; the keys' expiry follows its commit."""
    codec = ScoreCodec(season.time_bits)
    bits, capacity = codec.time_bits, codec.max_points
    rule = season.game.tie_rule
    ascending = season.game.ascending
    season_id = season.id
    board: tuple[str, str, str] | None = None
    ranker = Ranker(rule)
    position = 0
    previous = 0
    rows = 0
    for chunk in entries:
        out = []
        for kind, _, region, period, player, score, _ in chunk:
            if board is None or period != board[2] or region != board[1] or kind != board[0]:
                board = (kind, region, period)
                ranker = Ranker(rule)
                position = 0
            elif score > previous:
                raise OutOfOrder(f"{player} on {kind} {region} {period}: a higher score after a lower one")
            previous = score
            stored = score >> bits
            shown = capacity - stored if ascending else stored
            out.append((season_id, kind, region, period, position, ranker.rank(stored), player, shown))
            position += 1
        rows += copy_rows(FrozenStanding._meta.db_table, STANDING_COLUMNS, out)
    transaction.on_commit(lambda: season_keys_expire(season=season), robust=True)
    return rows


def standings_load(*, season: Season, boards: Iterable[tuple[str, Sequence[Any]]], connections: int = 1) -> int:
    """Write the final standings of a season that has none, ranked inside PostgreSQL, and return
    the number of rows.

    `boards` are queries (SQL and parameters) each selecting members of some boards in the shape of
    `BoardEntry`, in any order; every board's members are in one query. No row passes through
    Python: each query is one INSERT ... SELECT that numbers the positions and ranks with window
    functions (as `Ranker` does, see `_ranked_sql`). The rows go into a table of the season's own
    without indexes, which is then indexed and attached as the season's partition of
    FrozenStanding: keeping the indexes up to date row by row cost several times the load. A
    season with standings already written through the parent (`standings_store`) or a partition
    left from an earlier attempt gets them through the parent instead.

    Call inside the transaction that marks the season frozen, holding the season's row lock: the
    attachment commits with it. ATTACH, last, takes a SHARE UPDATE EXCLUSIVE lock on FrozenStanding
    (reads go on; another freeze's ATTACH waits for the commit) and an ACCESS EXCLUSIVE lock on its
    DEFAULT partition, which it reads (small: the rows written through the parent). Raises
    ScoreOverflow at a member whose encoded score is NULL (past the season's exact capacity); the
    keys' expiry follows the commit.

    `connections` 1: the table is made, filled and indexed in the caller's transaction, one query
    and one index after the other, on one core (`_load_here`). More (the freeze,
    `LOAD_CONNECTIONS`): that many connections of its own rank the queries at once (`_load_beside`).
    Only a caller whose transaction is the outermost may ask for more than 1: the other connections
    see the ledger as committed, not as the caller's transaction sees it.

    What keeps that atomic, crash-safe and idempotent:
    - the season's standings exist for readers only once the transaction that attaches them and
      marks the season frozen commits; the `_load` table before that is a table nobody reads, and
      it cannot be half attached (rename and ATTACH are in that transaction);
    - a failure while loading, indexing or attaching drops the `_load` table (ScoreOverflow too),
      the caller still holding the season's row lock; a crash (process killed, connection lost)
      leaves it, unattached, with no effect on readers, until the season's next freeze (beat
      retries every 15 s) drops it before it starts, under the season's row lock, so it never
      meets another freezer's table; the temporary tables go with their connections;
    - a helper's backend stops within HELPER_CHECK_INTERVAL of its client going away
      (client_connection_check_interval): measured, a freeze killed (SIGKILL) 25 s into its load
      left no backend 2 s later, and the next one ran through;
    - each query still sees the ledger as of its own start, as one INSERT after the other did.
    Disk: the table and its indexes, as before (0.9 GB and 1.3 GB at 10M rows), once per attempt,
    and while loading, one query's rows per connection in its temporary table (about 0.2 GB each).
    """
    part = f"{FrozenStanding._meta.db_table}_s{int(season.id)}"
    with connection.cursor() as cursor:
        through_parent = _has_standings(cursor, season=season, part=part)
        rows = None
        if not through_parent and connections > 1:
            boards = list(boards)
            rows = _load_beside(cursor, season=season, part=part, boards=boards, connections=connections)
        if rows is None:
            rows = _load_here(cursor, season=season, part=part, through_parent=through_parent, boards=boards)
    transaction.on_commit(lambda: season_keys_expire(season=season), robust=True)
    return rows


def _has_standings(cursor: Any, *, season: Season, part: str) -> bool:
    """Whether the season has standings already, or a partition left from an earlier attempt: the
    load then goes through the parent."""
    parent = FrozenStanding._meta.db_table
    cursor.execute(
        f"SELECT to_regclass(%s) IS NOT NULL OR EXISTS (SELECT 1 FROM {parent}_default WHERE season_id = %s)",
        [part, season.id],
    )
    [[found]] = cursor.fetchall()
    return bool(found)


def _load_here(
    cursor: Any, *, season: Season, part: str, through_parent: bool, boards: Iterable[tuple[str, Sequence[Any]]]
) -> int:
    """`standings_load` on one connection, in the caller's transaction."""
    parent = FrozenStanding._meta.db_table
    cursor.execute(f"DROP TABLE IF EXISTS {part}_load")  # left by a freeze on connections of its own
    target = parent if through_parent else part
    if not through_parent:
        cursor.execute(_create_sql(season=season, part=part, table=part))
    rows = 0
    for number, (sql, params) in enumerate(boards):
        started = time.perf_counter()
        count = _ranked_insert(cursor, season=season, target=target, sql=sql, params=params)
        rows += count
        logger.info(
            "season %s standings: query %d, %d rows ranked in %.1f s", season.id, number, count, _since(started)
        )
    if not through_parent:
        cursor.execute(f"SET LOCAL maintenance_work_mem = '{INDEX_WORK_MEM}'")
        for statement in [
            *_index_sql(part=part, table=part),
            f"ANALYZE {part}",
            *_attach_sql(season=season, part=part),
        ]:
            _timed(cursor, season=season, statement=statement)
    return rows


def _load_beside(
    cursor: Any, *, season: Season, part: str, boards: Sequence[tuple[str, Sequence[Any]]], connections: int
) -> int | None:
    """`standings_load` on `connections` connections of its own, then the attachment in the
    caller's transaction (`cursor`). None, having done nothing, when they cannot be opened (the
    server's max_connections reached, say): the caller loads on its own connection then.

    The connections (`_Helpers`: autocommit, the caller's session settings) rank the queries at
    once, each into a temporary table of its connection's, and copy them in turn, in the queries'
    order, into one table named `<partition>_load`, committed, laid out in the order of the
    position index (`_copy_in_order`); one of them then builds the three indexes (each with
    PostgreSQL's parallel maintenance workers) and ANALYZE. The caller's transaction only renames
    that table to the partition's name, turns its unique indexes into the constraints the parent's
    need and attaches it: milliseconds, nothing scanned or built."""
    stage = f"{part}_load"
    counts: list[int] = []
    cursor.execute("SELECT name, current_setting(name) FROM pg_settings WHERE source = 'session'")
    try:
        helpers = _Helpers(connections, settings=cursor.fetchall())
    except psycopg.Error as error:
        logger.warning("season %s standings: no connections of its own (%s); loaded on one", season.id, error)
        return None
    try:
        try:
            helpers.run_first(f"DROP TABLE IF EXISTS {stage}")  # left by a freeze that did not finish
            helpers.run_first(_create_sql(season=season, part=part, table=stage))
            started = time.perf_counter()
            turns = _Turns()
            tasks = [
                _rank_task(season=season, stage=stage, number=n, query=q, turns=turns, counts=counts)
                for n, q in enumerate(boards)
            ]
            helpers.spread(tasks, on_failure=turns.stop)
            logger.info(
                "season %s standings: %d queries, %d rows ranked on %d connections in %.1f s",
                season.id,
                len(boards),
                sum(counts),
                len(helpers),
                _since(started),
            )
            with helpers.connections[0].cursor() as helper:
                for statement in [*_index_sql(part=part, table=stage), f"ANALYZE {stage}"]:
                    _timed(helper, season=season, statement=statement)
            # Their own savepoint: on a failure the rename is undone and its lock let go, so the
            # table can be dropped (below) while the caller still holds the season's row lock.
            with transaction.atomic():
                for statement in [f"ALTER TABLE {stage} RENAME TO {part}", *_attach_sql(season=season, part=part)]:
                    _timed(cursor, season=season, statement=statement)
        except BaseException:
            helpers.discard(stage)
            raise
    finally:
        helpers.close()
    return sum(counts)


def _create_sql(*, season: Season, part: str, table: str) -> str:
    """The season's table, with the partition's bound as a CHECK from the start: checked row by
    row as the rows go in, it spares ATTACH a scan of them."""
    parent = FrozenStanding._meta.db_table
    return (
        f"CREATE TABLE {table} (LIKE {parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS, "
        f"CONSTRAINT {part}_season CHECK (season_id = {int(season.id)}))"
    )


def _index_sql(*, part: str, table: str) -> list[str]:
    """The partition's indexes: the ones FrozenStanding's (migration 0007) need, so that ATTACH
    builds none. In this order, as before: where two of them cost a read the same (a board of a few
    rows), the planner takes the one created first."""
    keys = "season_id, board, region, period"
    return [
        f"CREATE UNIQUE INDEX {part}_pkey ON {table} (id, season_id)",
        f"CREATE UNIQUE INDEX {part}_position ON {table} ({keys}, position)",
        f"CREATE INDEX {part}_player ON {table} (player_id, {keys})",
    ]


def _attach_sql(*, season: Season, part: str) -> list[str]:
    """The indexed table made the season's partition: its unique indexes become the constraints
    (milliseconds: the columns are NOT NULL already), ATTACH finds every index the parent's need
    (none is built) and, the CHECK proving the bound, scans nothing."""
    parent = FrozenStanding._meta.db_table
    return [
        f"ALTER TABLE {part} ADD CONSTRAINT {part}_pkey PRIMARY KEY USING INDEX {part}_pkey",
        f"ALTER TABLE {part} ADD CONSTRAINT {part}_position UNIQUE USING INDEX {part}_position",
        f"ALTER TABLE {parent} ATTACH PARTITION {part} FOR VALUES IN ({int(season.id)})",
        f"ALTER TABLE {part} DROP CONSTRAINT {part}_season",
    ]


def _timed(cursor: Any, *, season: Season, statement: str) -> None:
    started = time.perf_counter()
    cursor.execute(statement)
    logger.info("season %s standings: %s in %.1f s", season.id, " ".join(statement.split()[:4]), _since(started))


def _since(started: float) -> float:
    return time.perf_counter() - started


def _rank_task(
    *, season: Season, stage: str, number: int, query: tuple[str, Sequence[Any]], turns: "_Turns", counts: list[int]
) -> Callable[[Any], None]:
    """One query ranked on a helper's cursor into a temporary table of its connection's
    (`RANKED`), then, in its turn (the queries' order), copied into the `_load` table board by
    board in the order of the position index (`_copy_in_order`)."""
    sql, params = query

    def run(cursor: Any) -> None:
        started = time.perf_counter()
        parent = FrozenStanding._meta.db_table
        cursor.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {RANKED} (LIKE {parent} INCLUDING CONSTRAINTS)")
        cursor.execute(f"ALTER TABLE {RANKED} DROP COLUMN IF EXISTS id")  # the `_load` table numbers the rows
        for hashed in (True, False):
            try:
                cursor.execute(_ranked_sql(season=season, target=RANKED, sql=sql, hashed=hashed), params)
                break
            except psycopg.errors.NotNullViolation as error:
                if error.diag.column_name == "rank" and hashed:
                    logger.warning(
                        "season %s standings: two boards of query %d share a hash; ranked again", season.id, number
                    )
                    continue
                if error.diag.column_name != "score":
                    raise
                _overflow_raise(cursor, sql=sql, params=params)
        count = int(cursor.rowcount)
        ranked = _since(started)
        turns.wait(number)
        started = time.perf_counter()
        _copy_in_order(cursor, stage=stage)
        turns.done()
        counts.append(count)
        logger.info(
            "season %s standings: query %d, %d rows ranked in %.1f s, copied in %.1f s",
            season.id,
            number,
            count,
            ranked,
            _since(started),
        )

    return run


def _copy_in_order(cursor: Any, *, stage: str) -> None:
    """The rows of `RANKED` appended to `stage` in the order of the position index (board, region,
    period as bytes, as the database's C.UTF-8 collation orders them, then position), in one
    transaction, and `RANKED` emptied. They lie in `RANKED` board after board (in the order of
    their hash), each board's from its position 0 on: each board is copied as the range of row
    addresses (ctid, a TID range scan) from its position 0 to the next board's, so nothing is
    sorted again."""
    cursor.execute(f"SELECT ctid::text, board, region, period FROM {RANKED} WHERE position = 0")
    heads = sorted(
        (tuple(int(n) for n in ctid.strip("()").split(",")), (board.encode(), region.encode(), period.encode()))
        for ctid, board, region, period in cursor.fetchall()
    )
    ranges = [(start, heads[i + 1][0] if i + 1 < len(heads) else None, key) for i, (start, key) in enumerate(heads)]
    ranges.sort(key=lambda r: r[2])
    columns = ", ".join(STANDING_COLUMNS)
    with cursor.connection.transaction():
        for first in range(0, len(ranges), COPY_RANGES):
            parts, params = [], []
            for start, end, _ in ranges[first : first + COPY_RANGES]:
                parts.append(
                    f"SELECT {columns} FROM {RANKED} WHERE ctid >= %s::tid" + (" AND ctid < %s::tid" if end else "")
                )
                params += [f"({start[0]},{start[1]})", *([f"({end[0]},{end[1]})"] if end else [])]
            cursor.execute(f"INSERT INTO {stage} ({columns}) " + " UNION ALL ".join(parts), params)
    cursor.execute(f"TRUNCATE {RANKED}")


def _ranked_insert(cursor: Any, *, season: Season, target: str, sql: str, params: Sequence[Any]) -> int:
    """INSERT one query's members, ranked, into `target`; each try a savepoint, so that an overflow
    raises ScoreOverflow with the transaction still usable and a collision of board hashes ranks
    the query again (`_ranked_sql`)."""
    for hashed in (True, False):
        try:
            with transaction.atomic():
                cursor.execute(_ranked_sql(season=season, target=target, sql=sql, hashed=hashed), params)
                return int(cursor.rowcount)
        except IntegrityError as error:
            diag = getattr(error.__cause__, "diag", None)
            column = getattr(diag, "column_name", None)
            if column == "rank" and hashed:
                logger.warning("season %s standings: two boards of a query share a hash; ranked again", season.id)
                continue
            if column != "score":
                raise
    _overflow_raise(cursor, sql=sql, params=params)


def _overflow_raise(cursor: Any, *, sql: str, params: Sequence[Any]) -> NoReturn:
    """ScoreOverflow naming the first member of `sql` whose encoded score is NULL."""
    cursor.execute(
        f"SELECT board, season_id, region, period, player_id FROM ({sql}) "
        "AS b(board, season_id, region, period, player_id, score, last_us) WHERE score IS NULL LIMIT 1",
        params,
    )
    kind, season_id, region, period, player = cursor.fetchone()
    raise ScoreOverflow(
        f"{player} on the {kind} board {region} {period} of season {season_id}: past the season's exact capacity"
    )


def _ranked_sql(*, season: Season, target: str, sql: str, hashed: bool = True) -> str:
    """INSERT ... SELECT of `sql`'s members with their position and rank, as `standings_store` and
    `Ranker` count them: position 0-based in display order (encoded score descending, then player id
    by code point), rank by the game's tie rule over points (score >> time_bits), as ranking.py's
    `sql_rank` writes it (competition rank(), dense dense_rank(), first row_number(): the position
    + 1) over the windows `r` (points) and `w` (display order). The rank's order is a prefix of the
    position's, so PostgreSQL sorts each board once for both. A NULL encoded score (an overflow)
    gives a NULL shown score, which the NOT NULL column refuses.

    The boards are told apart (PARTITION BY) by one bigint, a hash of their kind, region and period
    (BOARD_HASH), rather than by the three strings: the sort of a kind's 2M rows compares the
    partition first on every comparison, and three strings cost 10 s more than a bigint (20.1 s
    against 9.9 s for the sort and both window functions, measured on this machine). That the hash
    told every two boards apart is checked row by row: each row's board must be its predecessor's
    in the partition (lag), or its rank is NULL, which the NOT NULL column refuses; the caller then
    ranks that query again with `hashed` False, the boards told apart by the strings themselves (as
    bytes, COLLATE "C")."""
    codec = ScoreCodec(season.time_bits)
    bits = int(codec.time_bits)
    points = f"(b.score >> {bits})"
    shown = f"{int(codec.max_points)} - {points}" if season.game.ascending else points
    rank = sql_rank(season.game.tie_rule, by_points="r", in_order="w")
    members = f"({sql}) AS b(board, season_id, region, period, player_id, score, last_us)"
    if hashed:
        same = " AND ".join(f"lag(b.{c}, 1, b.{c}) OVER w = b.{c}" for c in ("board", "region", "period"))
        rank = f"CASE WHEN {same} THEN {rank} END"
        members = f"(SELECT {BOARD_HASH} AS board_hash, b.* FROM {members}) AS b"
        partition = "b.board_hash"
    else:
        partition = 'b.board COLLATE "C", b.region COLLATE "C", b.period COLLATE "C"'
    return (
        f"INSERT INTO {target} (season_id, board, region, period, position, rank, player_id, score) "
        f"SELECT b.season_id, b.board, b.region, b.period, row_number() OVER w - 1, {rank}, b.player_id, {shown} "
        f"FROM {members} "
        f"WINDOW p AS (PARTITION BY {partition}), "
        f"r AS (p ORDER BY {points} DESC), "
        f'w AS (p ORDER BY {points} DESC, b.score DESC, b.player_id COLLATE "C")'
    )


class _Helpers:
    """Connections of a freeze's own beside Django's, autocommit, each with the freeze transaction's
    session settings (the ledger job's, `scoring.selectors.ledger_job_settings`, whose work_mem the
    window sorts use too), then INDEX_WORK_MEM for the index builds and HELPER_CHECK_INTERVAL."""

    def __init__(self, count: int, *, settings: Sequence[tuple[str, str]]) -> None:
        params = connection.get_connection_params()
        self.connections: list[psycopg.Connection[Any]] = []
        try:
            for _ in range(count):
                conn = psycopg.connect(**params, autocommit=True)
                self.connections.append(conn)
                with conn.cursor() as cursor:
                    for name, value in settings:
                        cursor.execute("SELECT set_config(%s, %s, false)", [name, value])
                    cursor.execute(f"SET maintenance_work_mem = '{INDEX_WORK_MEM}'")
                    cursor.execute(f"SET client_connection_check_interval = '{HELPER_CHECK_INTERVAL}'")
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self.connections)

    def close(self) -> None:
        for conn in self.connections:
            conn.close()

    def run_first(self, statement: str) -> None:
        with self.connections[0].cursor() as cursor:
            cursor.execute(statement)

    def discard(self, table: str) -> None:
        """Drop `table` after a failure, on the first connection still usable; the failure is what
        the caller raises, so this one only logs its own."""
        for conn in self.connections:
            try:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
                return
            except psycopg.Error as error:
                logger.warning("standings: %s not dropped on this connection (%s)", table, error)

    def spread(self, tasks: Sequence[Callable[[Any], None]], *, on_failure: Callable[[], None]) -> None:
        """Run `tasks` on the connections, each taking the next in order as it comes free. At the
        first failure the statements running elsewhere are cancelled, `on_failure` is called and no
        task starts; it is raised."""
        pending: queue.SimpleQueue[Callable[[Any], None]] = queue.SimpleQueue()
        for task in tasks:
            pending.put(task)
        failures: list[BaseException] = []
        lock = threading.Lock()

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.cursor() as cursor:
                while True:
                    with lock:
                        if failures or pending.empty():
                            return
                        task = pending.get()
                    try:
                        task(cursor)
                    except BaseException as error:
                        with lock:
                            failures.append(error)
                        self.cancel(but=conn)
                        on_failure()
                        return

        threads = [
            threading.Thread(target=work, args=(conn,), name=f"standings-{n}", daemon=True)
            for n, conn in enumerate(self.connections)
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                thread.join()
        except BaseException:  # interrupted: stop the statements, then let the caller clean up
            with lock:
                failures.append(RuntimeError("interrupted"))
            self.cancel(but=None)
            on_failure()
            for thread in threads:
                thread.join()
            raise
        if failures:
            raise failures[0]

    def cancel(self, *, but: "psycopg.Connection[Any] | None") -> None:
        for conn in self.connections:
            if conn is not but:
                conn.cancel_safe()


class _Stopped(Exception):
    """Another query of the load failed: this one's turn will not come."""


class _Turns:
    """The queries' turns to copy their rows into the `_load` table, in their order."""

    def __init__(self) -> None:
        self._next = 0
        self._stopped = False
        self._changed = threading.Condition()

    def wait(self, number: int) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._stopped or self._next == number)
            if self._stopped:
                raise _Stopped

    def done(self) -> None:
        with self._changed:
            self._next += 1
            self._changed.notify_all()

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()


def season_keys_expire(*, season: Season) -> None:
    """Give every Redis key of a frozen season an expiry (SEASON_KEYS_TTL_AFTER_FREEZE_S)."""
    redis = boards_client()
    ttl = int(settings.SEASON_KEYS_TTL_AFTER_FREEZE_S)
    pipe = redis.pipeline(transaction=False)
    for key in redis.scan_iter(match=keys.season_pattern(season.game.slug, season.id), count=1000):
        pipe.expire(key, ttl)
    pipe.execute()


def season_archive(*, season: Season, now: datetime) -> bool:
    """Drop what is left of a frozen season's Redis keys (UNLINK: freed in the background); the
    season is `archived` from then on. False when it is not frozen or already archived."""
    if season.frozen_at is None or season.archived_at is not None:
        return False
    redis = boards_client()
    found = list(redis.scan_iter(match=keys.season_pattern(season.game.slug, season.id), count=1000))
    for start in range(0, len(found), 1000):
        redis.unlink(*found[start : start + 1000])
    return season_mark_archived(season_id=season.id, now=now)


def standings_count(*, season: Season) -> int:
    return FrozenStanding.objects.filter(season=season).count()
