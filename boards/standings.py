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
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from common.db import copy_rows
from common.redis import client
from seasons.models import Season
from seasons.services import season_mark_archived

from . import keys
from .codec import ScoreCodec, ScoreOverflow
from .models import FrozenStanding
from .ranking import Ranker
from .tally import BoardEntry

logger = logging.getLogger(__name__)

# What PostgreSQL may use to sort a freeze's rows into each index it builds (server memory, for
# the length of one CREATE INDEX).
INDEX_WORK_MEM = "256MB"
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


def standings_load(*, season: Season, boards: Iterable[tuple[str, Sequence[Any]]]) -> int:
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
    table, its indexes and the attachment commit with it. ATTACH, last, takes a SHARE UPDATE
    EXCLUSIVE lock on FrozenStanding (reads go on; another freeze's ATTACH waits for the commit)
    and an ACCESS EXCLUSIVE lock on its DEFAULT partition, which it reads (small: the rows written
    through the parent). Raises ScoreOverflow at a member whose encoded score is NULL (past the
    season's exact capacity); the keys' expiry follows the commit.
    """
    parent = FrozenStanding._meta.db_table
    part = f"{parent}_s{int(season.id)}"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT to_regclass(%s) IS NOT NULL OR EXISTS (SELECT 1 FROM {parent}_default WHERE season_id = %s)",
            [part, season.id],
        )
        [[through_parent]] = cursor.fetchall()
        target = parent if through_parent else part
        if not through_parent:
            cursor.execute(f"CREATE TABLE {part} (LIKE {parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
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
            keys = "season_id, board, region, period"
            for statement in [
                f"ALTER TABLE {part} ADD CONSTRAINT {part}_pkey PRIMARY KEY (id, season_id)",
                f"ALTER TABLE {part} ADD CONSTRAINT {part}_position UNIQUE ({keys}, position)",
                f"CREATE INDEX {part}_player ON {part} ({keys}, player_id)",
                f"ANALYZE {part}",  # its readers' plans; autovacuum may be late or off
                # With the partition's constraint proven by this check, ATTACH does not scan the rows again.
                f"ALTER TABLE {part} ADD CONSTRAINT {part}_season CHECK (season_id = {int(season.id)})",
                f"ALTER TABLE {parent} ATTACH PARTITION {part} FOR VALUES IN ({int(season.id)})",
                f"ALTER TABLE {part} DROP CONSTRAINT {part}_season",
            ]:
                started = time.perf_counter()
                cursor.execute(statement)
                logger.info(
                    "season %s standings: %s in %.1f s", season.id, " ".join(statement.split()[:4]), _since(started)
                )
    transaction.on_commit(lambda: season_keys_expire(season=season), robust=True)
    return rows


def _since(started: float) -> float:
    return time.perf_counter() - started


def _ranked_insert(cursor: Any, *, season: Season, target: str, sql: str, params: Sequence[Any]) -> int:
    """INSERT one query's members, ranked, into `target`; a savepoint, so that an overflow raises
    ScoreOverflow with the transaction still usable."""
    try:
        with transaction.atomic():
            cursor.execute(_ranked_sql(season=season, target=target, sql=sql), params)
            return int(cursor.rowcount)
    except IntegrityError as error:
        diag = getattr(error.__cause__, "diag", None)
        if diag is None or diag.column_name != "score":
            raise
    cursor.execute(
        f"SELECT board, season_id, region, period, player_id FROM ({sql}) "
        "AS b(board, season_id, region, period, player_id, score, last_us) WHERE score IS NULL LIMIT 1",
        params,
    )
    kind, season_id, region, period, player = cursor.fetchone()
    raise ScoreOverflow(
        f"{player} on the {kind} board {region} {period} of season {season_id}: past the season's exact capacity"
    )


def _ranked_sql(*, season: Season, target: str, sql: str) -> str:
    """INSERT ... SELECT of `sql`'s members with their position and rank, as `standings_store` and
    `Ranker` count them: position 0-based in display order (encoded score descending, then player id
    by code point), rank by the game's tie rule over points (score >> time_bits): competition is
    rank(), dense dense_rank(), first the position + 1. The rank's order is a prefix of the
    position's, so PostgreSQL sorts each board once for both; the boards are told apart by bytes
    (COLLATE "C"), which spares that sort the locale's string comparisons. A NULL encoded score
    (an overflow) gives a NULL shown score, which the NOT NULL column refuses."""
    codec = ScoreCodec(season.time_bits)
    bits = int(codec.time_bits)
    points = f"(b.score >> {bits})"
    shown = f"{int(codec.max_points)} - {points}" if season.game.ascending else points
    rank = {"first": "row_number() OVER w", "competition": "rank() OVER r"}.get(
        season.game.tie_rule, "dense_rank() OVER r"
    )
    return (
        f"INSERT INTO {target} (season_id, board, region, period, position, rank, player_id, score) "
        f"SELECT b.season_id, b.board, b.region, b.period, row_number() OVER w - 1, {rank}, b.player_id, {shown} "
        f"FROM ({sql}) AS b(board, season_id, region, period, player_id, score, last_us) "
        'WINDOW p AS (PARTITION BY b.board COLLATE "C", b.region COLLATE "C", b.period COLLATE "C"), '
        f"r AS (p ORDER BY {points} DESC), "
        f'w AS (p ORDER BY {points} DESC, b.score DESC, b.player_id COLLATE "C")'
    )


def season_keys_expire(*, season: Season) -> None:
    """Give every Redis key of a frozen season an expiry (SEASON_KEYS_TTL_AFTER_FREEZE_S)."""
    redis = client()
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
    redis = client()
    found = list(redis.scan_iter(match=keys.season_pattern(season.game.slug, season.id), count=1000))
    for start in range(0, len(found), 1000):
        redis.unlink(*found[start : start + 1000])
    return season_mark_archived(season_id=season.id, now=now)


def standings_count(*, season: Season) -> int:
    return FrozenStanding.objects.filter(season=season).count()
