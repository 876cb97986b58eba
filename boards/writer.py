"""The board writer: accepted ledger events onto the Redis boards, through one Lua script.

Events are grouped by the boards they touch (season, region, day, week); each group is one
EVALSHA of `lua/apply_events.lua`, all groups of a batch pipelined in one round trip. The script
skips events whose dedup marker exists, so a redelivered task or a re-run script counts nothing
twice; the ledger's `applied_at` is the durable record.
"""

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from seasons.models import Season, TieRule

from . import redis_boards
from .encoding import ScoreCodec, reached_seconds
from .models import EventStatus, ScoreEvent
from .selectors import json_list

logger = logging.getLogger(__name__)

APPLY_SCRIPT = redis_boards.lua_path(__file__, "apply_events.lua")


@dataclass(frozen=True)
class EventRow:
    id: int
    season_id: int
    player_id: str
    points: int
    accepted_at: datetime
    day: date
    week: str
    region: str | None
    extra_boards: tuple[str, ...] = ()


@dataclass
class ApplyReport:
    applied: int = 0
    skipped: int = 0
    paused: int = 0
    overflow: int = 0


def boards_for(
    *, game: str, season_id: int, day: date, week: str, region: str | None, extra: tuple[str, ...] = ()
) -> tuple[list[redis_boards.BoardRef], list[redis_boards.BoardRef]]:
    """The points boards and best boards one event lands on: global, its region's, and those of the
    game's extra dimensions (`country-de`)."""
    regions = [redis_boards.GLOBAL] + ([region] if region else []) + [e for e in extra if e != region]
    sums, bests = [], []
    for reg in regions:
        sums.append(redis_boards.BoardRef(game, season_id, "all", reg))
        sums.append(redis_boards.BoardRef(game, season_id, "daily", reg, day.isoformat()))
        sums.append(redis_boards.BoardRef(game, season_id, "weekly", reg, week))
        sums.append(redis_boards.BoardRef(game, season_id, "monthly", reg, day.strftime("%Y-%m")))
        bests.append(redis_boards.BoardRef(game, season_id, "best", reg))
    return sums, bests


def _season_meta(season_ids: set[int]) -> dict[int, tuple[Season, str, bool]]:
    seasons = Season.objects.filter(id__in=season_ids).select_related("game")
    return {s.id: (s, s.game.slug, s.game.tie_rule == TieRule.DENSE) for s in seasons}


def events_apply(
    *, events: list[EventRow], dedup_ttl_s: int, chunk: int = 2000
) -> tuple[ApplyReport, list[int], list[int]]:
    """Apply events to Redis. Returns the report, the ids now on the boards (applied or found
    applied before) and the ids refused for overflow. Paused (rebuilding) games apply nothing."""
    report = ApplyReport()
    if not events:
        return report, [], []
    meta = _season_meta({e.season_id for e in events})
    groups: dict[tuple[int, date, str, str | None, tuple[str, ...]], list[EventRow]] = defaultdict(list)
    for e in events:
        groups[(e.season_id, e.day, e.week, e.region, e.extra_boards)].append(e)

    client = redis_boards.client()
    script = redis_boards.lua_script(APPLY_SCRIPT)
    pipe = client.pipeline(transaction=False)
    calls: list[tuple[list[EventRow], list[str]]] = []
    for (season_id, day, week, region, extra), rows in groups.items():
        season, game, dense = meta[season_id]
        codec = ScoreCodec(season.time_bits)
        sums, bests = boards_for(game=game, season_id=season_id, day=day, week=week, region=region, extra=extra)
        ascending = season.game.ascending
        if ascending:  # lower is better: every board keeps the best (lowest) value of its window
            sums, bests = [], sums + bests
        boards = sums + bests
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            keys: list[str] = [redis_boards.pause_key(game), redis_boards.hidden_key(game)] + [b.key for b in boards]
            if dense:
                keys += [b.distinct_key for b in boards]
            dedup_index: dict[str, int] = {}
            args: list[Any] = [codec.time_span, codec.max_points, len(sums), len(bests), int(dense), dedup_ttl_s]
            args += [redis_boards.board_ttl_s(b.board) for b in boards]
            event_args: list[Any] = []
            for e in part:
                dkey, field = redis_boards.dedup_location(e.id)
                if dkey not in dedup_index:
                    keys.append(dkey)
                    dedup_index[dkey] = len(keys)
                reached = reached_seconds(season_start=season.starts_at, accepted_at=e.accepted_at)
                event_args += [
                    e.id,
                    dedup_index[dkey],
                    field,
                    e.player_id,
                    codec.stored_points(e.points, ascending=ascending),
                    min(reached, codec.max_reached_s),
                ]
            script(keys=keys, args=args + event_args, client=pipe)
            calls.append((part, [b.key for b in boards]))
    on_boards: list[int] = []
    overflow: list[int] = []
    changed: set[str] = set()
    for (part, board_keys), reply in zip(calls, pipe.execute(), strict=True):
        if reply[0] == "paused":
            report.paused += len(part)
            continue
        if int(reply[1]):
            changed.update(board_keys)
        report.applied += int(reply[1])
        report.skipped += int(reply[2])
        refused = {int(x) for x in reply[3:]}
        report.overflow += len(refused)
        overflow.extend(refused)
        on_boards.extend(e.id for e in part if e.id not in refused)
    if changed:  # for the live publisher (boards/events.py): one push per board per second at most
        client.sadd(redis_boards.dirty_key(), *changed)
        client.sadd(redis_boards.histogram_dirty_key(), *changed)
    return report, on_boards, overflow


_TABLE = ScoreEvent._meta.db_table


def _unapplied_rows(event_ids: list[int]) -> list[EventRow]:
    # One array parameter, not thousands of placeholders: this runs for every batch.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, season_id, player_id, points, accepted_at, day, week, region, extra_boards "
            f"FROM {_TABLE} WHERE id = ANY(%s::bigint[]) AND status = %s AND applied_at IS NULL ORDER BY id",
            [event_ids, EventStatus.ACCEPTED.value],
        )
        return [
            EventRow(
                id=row[0],
                season_id=row[1],
                player_id=row[2],
                points=row[3],
                accepted_at=row[4],
                day=row[5],
                week=row[6],
                region=row[7],
                extra_boards=tuple(json_list(row[8])),
            )
            for row in cursor.fetchall()
        ]


def events_apply_by_id(*, event_ids: list[int], dedup_ttl_s: int, chunk: int = 2000) -> ApplyReport:
    """Apply the still-unapplied accepted events among `event_ids`, then mark them applied.

    Idempotent: the ledger filter skips events already applied; the Lua dedup skips events that
    reached Redis but whose `applied_at` was not written (a crash in between).
    """
    events = _unapplied_rows(event_ids)
    report, on_boards, overflow = events_apply(events=events, dedup_ttl_s=dedup_ttl_s, chunk=chunk)
    with connection.cursor() as cursor:
        if on_boards:
            cursor.execute(
                f"UPDATE {_TABLE} SET applied_at = %s WHERE id = ANY(%s::bigint[]) AND applied_at IS NULL",
                [timezone.now(), on_boards],
            )
        if overflow:
            logger.error("events %s would pass the season's exact score capacity; rejected", overflow)
            cursor.execute(
                f"UPDATE {_TABLE} SET status = %s, reason = 'score_overflow' WHERE id = ANY(%s::bigint[])",
                [EventStatus.REJECTED.value, overflow],
            )
    return report


def unapplied_select(*, older_than: datetime, stale_enqueue_before: datetime, limit: int) -> list[int]:
    """Accepted events still unapplied (the outbox), claimed with SKIP LOCKED and stamped."""
    ids = list(
        ScoreEvent.objects.select_for_update(skip_locked=True)
        .filter(status=EventStatus.ACCEPTED, applied_at__isnull=True, accepted_at__lt=older_than)
        .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=stale_enqueue_before))
        .order_by("accepted_at")
        .values_list("id", flat=True)[:limit]
    )
    if ids:
        ScoreEvent.objects.filter(id__in=ids).update(enqueued_at=timezone.now())
    return ids
