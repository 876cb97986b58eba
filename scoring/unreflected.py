"""Applied in the ledger, absent from Redis: results whose dedup marker is missing or names another
event, found and put back on their boards.

Every apply writes the event's marker (its tag, boards/keys.py `dedup_tag`) in the same Lua call as
its board writes, and a rebuild writes the markers of what it swaps in. So an event that the ledger
says is applied and whose marker Redis does not hold never reached this Redis's boards, or Redis
lost it since: a Redis restored from an older snapshot, a failover that lost the last writes, a
ledger restored over a Redis that was not brought in line (docs/operations.md, "Restoring
PostgreSQL"), a marker left by another event under the same id (1 in 2^32).

`unreflected_check` (beat: with `scoring.boards_reconcile`; command: `reconcile_boards`) reads the
events accepted since the last check (a watermark on the ledger's id, `lb:unreflected-mark`), at
most CHECK_MAX a run (the newest, when more came: the rest is reported unchecked), and compares
their markers (HMGET per hash of 128). Only events the check can judge count:
- applied after the boards marker was written (a recovery rebuilds boards without re-marking the
  events that were already applied) and within the markers' lifetime (SCORING_DEDUP_TTL_S): the
  apply records (`ApplyRecord`, one row per apply) say when;
- accepted more than SETTLE_S ago (applies in flight have settled), of a season not frozen.
The players of the events found are rewritten from the ledger (`player_correct`), or their game
is rebuilt when there are more than REBUILD_ABOVE of them. A metric
(`leaderboard_reconcile_unreflected_events_total{game}`) and one log line per game say how many.
"""

import logging
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import OperationalError, connection
from django.utils import timezone

from boards.epoch import epoch_get
from boards.keys import dedup_location, dedup_tag, unreflected_mark_key
from boards.slots import EventSlots
from boards.writer import GamePaused
from common.metrics import count
from common.redis import boards_client, client
from seasons.models import Game
from seasons.selectors import frozen_season_ids, games_by_id

from .corrections import player_correct
from .models import ApplyRecord, EventStatus, ScoreEvent, UnappliedEvent
from .rebuild import RebuildBusy, boards_rebuild

logger = logging.getLogger(__name__)

CHECK_MAX = 200_000  # events compared per run at most
SETTLE_S = 60  # events accepted more recently than this are left to the next run
LIFETIME_MARGIN_S = 600  # markers this close to their expiry are not relied on
REBUILD_ABOVE = 1_000  # more players than this in one game: rebuild the game instead


@dataclass
class UnreflectedReport:
    checked: int = 0  # events compared
    unchecked: int = 0  # events passed over (more than CHECK_MAX since the last run)
    missing: int = 0  # events applied in the ledger, not in Redis
    by_game: dict[str, int] = field(default_factory=dict)
    players: int = 0
    repaired: int = 0  # boards rewritten
    rebuilt: list[str] = field(default_factory=list)  # games rebuilt instead
    unrepaired: int = 0  # players left for a later run (a rebuild's pause, a concurrent change)
    skipped: str = ""
    seconds: float = 0.0


Row = tuple[int, int, str, int, datetime]  # id, game id, player id, season id, accepted_at


def unreflected_check(*, repair: bool = True, now: datetime | None = None, limit: int = CHECK_MAX) -> UnreflectedReport:
    """Compare the markers of the events accepted since the last run with the ledger; repair what is
    missing unless `repair` is False (the watermark then stays where it was)."""
    clock = time.monotonic()
    now = now or timezone.now()
    report = UnreflectedReport()
    epoch = epoch_get()
    if epoch is None:
        report.skipped = "the boards marker is missing: the recovery rebuilds every game"
        return report
    redis = client()
    watermark = int(redis.get(unreflected_mark_key()) or 0)
    newest = ScoreEvent.objects.filter(accepted_at__lt=now - timedelta(seconds=SETTLE_S)).order_by("-id")
    top = newest.values_list("id", flat=True).first()
    if top is None or top <= watermark:
        return report
    if top - watermark > limit:
        report.unchecked = top - watermark - limit
        watermark = top - limit
    rows = _events_checkable(after=watermark, upto=top, epoch=epoch, now=now)
    report.checked = len(rows)
    missing = _missing(rows)
    report.missing = len(missing)
    _missing_per_game(missing, repair=repair, report=report)
    if repair:
        redis.set(unreflected_mark_key(), top)
    report.seconds = round(time.monotonic() - clock, 2)
    if not missing:
        logger.info("reconcile: %d applied results checked against their markers, none missing", report.checked)
    return report


def _events_checkable(*, after: int, upto: int, epoch: str, now: datetime) -> list[Row]:
    """The events of the id range the check can judge: applied since the boards marker was written
    (`epoch`) and within the markers' lifetime, of seasons not frozen (a frozen season is read from
    its standings)."""
    applied_since = max(
        datetime.fromisoformat(epoch.split()[0]),
        now - timedelta(seconds=settings.SCORING_DEDUP_TTL_S - LIFETIME_MARGIN_S),
    )
    frozen = frozen_season_ids()
    return [row for row in _events(after=after, upto=upto, applied_since=applied_since) if row[3] not in frozen]


def _missing_per_game(missing: list[Row], *, repair: bool, report: UnreflectedReport) -> None:
    """The events found missing, counted per game (the report, the metric) and logged; with
    `repair`, their players' boards rewritten from the ledger, or their game rebuilt (`_repair`)."""
    players: dict[int, set[str]] = defaultdict(set)
    found_by_game: Counter[int] = Counter()
    for _, game_id, player_id, _, _ in missing:
        players[game_id].add(player_id)
        found_by_game[game_id] += 1
    report.players = sum(len(p) for p in players.values())
    games = games_by_id(game_ids=players)
    for game_id, game_players in players.items():
        game = games.get(game_id)
        if game is None:
            continue
        found = found_by_game[game_id]
        report.by_game[game.slug] = found
        if repair:
            count(f"reconcile_unreflected:{game.slug}", found)
            _repair(game=game, players=game_players, report=report)
        logger.warning(
            "reconcile %s: %d results marked applied in the ledger were not in Redis (no dedup marker, or another "
            "event's); %s",
            game.slug,
            found,
            f"{len(game_players)} players' boards rewritten from the ledger" if repair else "not repaired",
        )


def _events(*, after: int, upto: int, applied_since: datetime) -> list[Row]:
    """Accepted and applied events with `after` < id <= `upto`, applied since `applied_since`: the
    ids of the apply records since then (a range of their time's index) within that range of the
    ledger's primary key, each row found by its key; those back in the outbox (approved or
    reinstated again, not applied since) left out."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT e.id, e.game_id, e.player_id, e.season_id, e.accepted_at FROM {ScoreEvent._meta.db_table} e "
            f"WHERE e.id IN (SELECT unnest(r.event_ids) FROM {ApplyRecord._meta.db_table} r WHERE r.applied_at >= %s) "
            "AND e.id > %s AND e.id <= %s AND e.status = %s "
            f"AND NOT EXISTS (SELECT 1 FROM {UnappliedEvent._meta.db_table} o WHERE o.event_id = e.id) ORDER BY e.id",
            [applied_since, after, upto, EventStatus.ACCEPTED.value],
        )
        return [(int(r[0]), int(r[1]), str(r[2]), int(r[3]), r[4]) for r in cursor.fetchall()]


def _missing(rows: list[Row]) -> list[Row]:
    """The rows whose marker Redis does not hold with their own tag."""
    by_key: dict[str, list[tuple[str, Row]]] = defaultdict(list)
    slots = EventSlots()
    for row in rows:
        key, dedup_field = dedup_location(row[0], slots.of(season_id=row[3], player_id=row[2]))
        by_key[key].append((dedup_field, row))
    missing: list[Row] = []
    keys = list(by_key)
    for start in range(0, len(keys), 1000):
        pipe = boards_client().pipeline(transaction=False)
        chunk = keys[start : start + 1000]
        for key in chunk:
            pipe.hmget(key, [f for f, _ in by_key[key]])
        for key, tags in zip(chunk, pipe.execute(), strict=True):
            for (_, row), tag in zip(by_key[key], tags, strict=True):
                if tag != dedup_tag(row[0], row[4]):
                    missing.append(row)
    return missing


def _repair(*, game: Game, players: set[str], report: UnreflectedReport) -> None:
    if len(players) > REBUILD_ABOVE:
        try:
            boards_rebuild(game=game, live_only=True, lock_wait_s=0)
            report.rebuilt.append(game.slug)
        except RebuildBusy:
            report.unrepaired += len(players)
        return
    for player in sorted(players):
        try:
            report.repaired += player_correct(game=game, player_id=player)
        except (GamePaused, OperationalError):
            report.unrepaired += 1
