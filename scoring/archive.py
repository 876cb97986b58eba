"""Retention: whole months of the ledger written to a file and dropped (`archive_ledger`), and
brought back (`restore_archive`). docs/operations.md, "Retention", is the runbook.

An archive is one uncompressed tar per month, `ledger-YYYY-MM.tar`, holding:
- `events.csv.gz` and `claims.csv.gz`: the month's two partitions, every column, in id order, as
  PostgreSQL's COPY writes CSV (with a header), gzip-compressed;
- `manifest.json`: the month, the columns of each table, each member's row count and the SHA-256
  of its uncompressed CSV, and the latest scoring migration when it was written.

A month is archived only when nothing can read or write it any more:
- every season whose window overlaps it is frozen (its boards answer from their standings, and a
  result played in it is refused `season_closed`: a replay older than the window is refused, never
  counted again);
- every tournament and league period with a result in it is final (their standings are stored);
- none of its events waits in the outbox.
The file is written, read back and checked (row counts against the partitions', checksums) before
the partitions are detached and dropped, in one transaction per month.
"""

import gzip
import hashlib
import io
import json
import logging
import os
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.db.migrations.recorder import MigrationRecorder

from competitions.league_models import LeaguePeriod, LeaguePeriodState
from competitions.models import TournamentPeriod
from seasons.models import Season

from .league_models import LeagueResult
from .ledger_partitions import (
    CLAIMS,
    EVENTS,
    month_after,
    month_bounds,
    partition_name,
    partitions_ensure,
    partitions_forget_local,
    partitions_list,
)
from .models import TournamentResult, UnappliedEvent

logger = logging.getLogger(__name__)

MEMBERS = {"events": EVENTS, "claims": CLAIMS}
FORMAT = 1


class ArchiveError(Exception):
    """An archive or a restore that must not go on (the reason in its message); nothing was dropped
    or written."""


@dataclass(frozen=True)
class Archived:
    month: date
    path: Path
    rows: dict[str, int]  # member -> rows
    bytes: int


def archive_path(folder: Path, month: date) -> Path:
    return folder / f"ledger-{month.year:04d}-{month.month:02d}.tar"


def months_before(before: date) -> list[date]:
    """The months with partitions that end on or before `before` (whole months only), oldest first."""
    months = sorted({p.month for p in partitions_list()})
    return [m for m in months if month_after(m) <= before]


def month_open_reasons(month: date) -> list[str]:
    """Why `month` cannot be archived yet (empty: it can)."""
    start, end = month_bounds(month)
    reasons = []
    open_seasons = Season.objects.filter(starts_at__lt=end, ends_at__gt=start, frozen_at__isnull=True)
    for season in open_seasons.select_related("game")[:5]:
        reasons.append(f"season {season.id} ({season.game.slug} {season.name}) is not frozen")
    events = partition_name(EVENTS, month)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT r.tournament_id, r.period FROM {TournamentResult._meta.db_table} r "
            f"JOIN {events} e ON e.id = r.event_id WHERE r.period IS NOT NULL AND NOT EXISTS "
            f"(SELECT 1 FROM {TournamentPeriod._meta.db_table} p WHERE p.tournament_id = r.tournament_id "
            "AND p.index = r.period) LIMIT 5"
        )
        reasons += [f"tournament {t} period {p} is not final" for t, p in cursor.fetchall()]
        cursor.execute(
            f"SELECT DISTINCT r.league_id, r.period FROM {LeagueResult._meta.db_table} r "
            f"JOIN {events} e ON e.id = r.event_id WHERE NOT EXISTS "
            f"(SELECT 1 FROM {LeaguePeriod._meta.db_table} p WHERE p.league_id = r.league_id "
            "AND p.index = r.period AND p.state = %s) LIMIT 5",
            [LeaguePeriodState.FINAL.value],
        )
        reasons += [f"league {lg} period {p} is not final" for lg, p in cursor.fetchall()]
        cursor.execute(
            f"SELECT count(*) FROM {UnappliedEvent._meta.db_table} WHERE played_at >= %s AND played_at < %s",
            [start, end],
        )
        [[waiting]] = cursor.fetchall()
        if waiting:
            reasons.append(f"{waiting} of its events wait in the outbox")
    return reasons


def ledger_archive(*, before: date, folder: Path, dry_run: bool = False) -> list[Archived]:
    """Archive every whole month before `before` that can be (oldest first); stops at the first
    that cannot, with `ArchiveError` naming why (months after it stay: archives have no holes)."""
    done: list[Archived] = []
    for month in months_before(before):
        reasons = month_open_reasons(month)
        if reasons:
            raise ArchiveError(f"{month:%Y-%m} cannot be archived: " + "; ".join(reasons))
        if dry_run:
            done.append(Archived(month, archive_path(folder, month), {}, 0))
            continue
        done.append(_archive_month(month, folder))
    return done


def _columns(table: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
            "ORDER BY attnum",
            [table],
        )
        return [row[0] for row in cursor.fetchall()]


def _archive_month(month: date, folder: Path) -> Archived:
    folder.mkdir(parents=True, exist_ok=True)
    path = archive_path(folder, month)
    if path.exists():
        raise ArchiveError(f"{path} exists already: move it away or restore it first")
    with transaction.atomic():
        # The month's partitions locked against writes while they are copied and checked (reads go on).
        with connection.cursor() as cursor:
            for table in MEMBERS.values():
                cursor.execute(f"LOCK TABLE {partition_name(table, month)} IN SHARE MODE")
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "month": month.isoformat(),
            "written_at": datetime.now().astimezone().isoformat(),
            "migration": _latest_migration(),
            "members": {},
        }
        partial = path.with_suffix(".tar.partial")
        with tarfile.open(partial, "w") as tar:
            for member, table in MEMBERS.items():
                manifest["members"][member] = _member_write(tar, member, partition_name(table, month))
            data = json.dumps(manifest, indent=2, sort_keys=True).encode()
            info = tarfile.TarInfo("manifest.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        _fsync(partial)
        checked = archive_check(partial)  # read back from disk: what a restore would read
        for member, table in MEMBERS.items():
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT count(*) FROM {partition_name(table, month)}")
                [[rows]] = cursor.fetchall()
            if checked[member] != rows:
                raise ArchiveError(f"{partial}: {member} holds {checked[member]} rows, the partition {rows}")
        os.replace(partial, path)
        _fsync(path.parent)
        with connection.cursor() as cursor:
            for table in MEMBERS.values():
                part = partition_name(table, month)
                cursor.execute(f"ALTER TABLE {table} DETACH PARTITION {part}")
                cursor.execute(f"DROP TABLE {part}")
        transaction.on_commit(partitions_forget_local)
    archived = Archived(month, path, {m: manifest["members"][m]["rows"] for m in MEMBERS}, path.stat().st_size)
    logger.info("ledger: %s archived to %s (%s)", month.strftime("%Y-%m"), path, archived.rows)
    return archived


def _member_write(tar: tarfile.TarFile, member: str, table: str) -> dict[str, Any]:
    """One partition as gzip-compressed CSV in the tar (through a temporary file: a tar member's
    size comes first); its row count and the SHA-256 of the CSV."""
    columns = _columns(table)
    digest = hashlib.sha256()
    with tempfile.TemporaryFile() as spool:
        with gzip.GzipFile(fileobj=spool, mode="wb", compresslevel=6) as gz, connection.cursor() as cursor:
            statement = f"COPY (SELECT * FROM {table} ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER true)"
            with cursor.cursor.copy(statement) as copy:
                for block in copy:
                    chunk = bytes(block)
                    digest.update(chunk)
                    gz.write(chunk)
            rows = cursor.cursor.rowcount
        size = spool.tell()
        spool.seek(0)
        info = tarfile.TarInfo(f"{member}.csv.gz")
        info.size = size
        tar.addfile(info, spool)
    return {"table": table, "columns": columns, "rows": rows, "sha256": digest.hexdigest()}


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _latest_migration() -> str:
    last = MigrationRecorder.Migration.objects.filter(app="scoring").order_by("-id").first()
    return last.name if last else ""


def _manifest(tar: tarfile.TarFile) -> dict[str, Any]:
    found = tar.extractfile("manifest.json")
    if found is None:
        raise ArchiveError("no manifest.json")
    manifest: dict[str, Any] = json.loads(found.read())
    if manifest.get("format") != FORMAT or set(manifest.get("members", {})) != set(MEMBERS):
        raise ArchiveError("not a ledger archive of this format")
    return manifest


def archive_check(path: Path) -> dict[str, int]:
    """Read an archive whole: every member decompresses, and its rows and SHA-256 are the
    manifest's. Returns the rows of each member; `ArchiveError` otherwise."""
    try:
        with tarfile.open(path, "r") as tar:
            manifest = _manifest(tar)
            counted = {}
            for member, facts in manifest["members"].items():
                digest, lines = hashlib.sha256(), 0
                stream = tar.extractfile(f"{member}.csv.gz")
                if stream is None:
                    raise ArchiveError(f"{member}.csv.gz missing")
                # Rows by their line ends (the header's one more): no column of the ledger holds a line
                # break; were one to, the count would differ and the month would stay (never dropped).
                with gzip.GzipFile(fileobj=stream) as gz:
                    while chunk := gz.read(1 << 20):
                        digest.update(chunk)
                        lines += chunk.count(b"\n")
                if digest.hexdigest() != facts["sha256"] or lines - 1 != facts["rows"]:
                    raise ArchiveError(f"{path}: {member} does not match its checksum")
                counted[member] = lines - 1
            return counted
    except (OSError, tarfile.TarError, EOFError, KeyError, ValueError) as exc:
        raise ArchiveError(f"{path}: unreadable ({exc})") from exc


def archive_restore(path: Path) -> tuple[date, dict[str, int]]:
    """Bring a month back: checked first, then its partitions created (or found empty) and loaded
    by COPY, in one transaction; the row counts checked against the manifest's. Returns the month and
    the rows restored."""
    counted = archive_check(path)
    with tarfile.open(path, "r") as tar:
        manifest = _manifest(tar)
        month = date.fromisoformat(manifest["month"])
        with transaction.atomic():
            partitions_forget_local()
            partitions_ensure([month])
            restored = {}
            for member, facts in manifest["members"].items():
                table = partition_name(MEMBERS[member], month)
                with connection.cursor() as cursor:
                    cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {table})")
                    [[busy]] = cursor.fetchall()
                    if busy:
                        raise ArchiveError(f"{table} holds rows already: {path} is restored, or the month reopened")
                    stream = tar.extractfile(f"{member}.csv.gz")
                    assert stream is not None
                    columns = ", ".join(facts["columns"])
                    statement = f"COPY {table} ({columns}) FROM STDIN WITH (FORMAT csv, HEADER true)"
                    with gzip.GzipFile(fileobj=stream) as gz, cursor.cursor.copy(statement) as copy:
                        while chunk := gz.read(1 << 20):
                            copy.write(chunk)
                    cursor.execute(f"SELECT count(*) FROM {table}")
                    [[rows]] = cursor.fetchall()
                if rows != counted[member]:
                    raise ArchiveError(f"{table}: {rows} rows loaded, the archive holds {counted[member]}")
                restored[member] = rows
            with connection.cursor() as cursor:
                for table in MEMBERS.values():
                    cursor.execute(f"ANALYZE {partition_name(table, month)}")
    logger.info("ledger: %s restored from %s (%s)", month.strftime("%Y-%m"), path, restored)
    return month, restored
