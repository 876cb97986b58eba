"""Redis came back empty: the live boards rebuilt from the ledger, by the service itself.

A beat task (`scoring.boards_recover`, every BOARDS_RECOVER_CHECK_S) reads the boards marker
(`boards.epoch`, one GET). While it is there nothing happens. When it is missing, Redis lost its
data (FLUSHALL, a restart without persistence) or this is the first start of a deployment (or of
this version): the recovery rebuilds the live boards of every game from the ledger, one game
after another (`boards_rebuild(live_only=True)`: seasons not frozen yet; display names, hidden
players and friends come back with them; the season catalog rebuilds itself on the first read),
then writes the marker. One recovery runs at a time (`lb:recover-lock`); the marker is written
only while its lock is still held, so a flush during the recovery starts it again at the next
check instead of leaving boards rebuilt before the flush marked complete.

Reads meanwhile answer from what Redis holds (the results applied since the flush), and every
accepted result is on its boards once the rebuild of its game swaps in: docs/operations.md
("Redis lost its data"). A Redis that cannot be reached is not an empty one: the check fails and
the next one asks again.
"""

import logging
import time
import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from boards.epoch import epoch_confirm, epoch_get
from boards.keys import recover_lock_key, unreflected_mark_key
from common.keys import metrics_key
from common.locks import LockLost, lock_held
from common.metrics import count, gauge_set
from common.redis import broker_key, client, client_for, deployment_keys_drop
from seasons.selectors import games_all

from .models import EventStatus, ScoreEvent
from .rebuild import boards_rebuild

logger = logging.getLogger(__name__)

RECOVER_LOCK_TTL_S = 30.0


@dataclass
class RecoveryReport:
    marker: str = ""  # the marker written ("" when the recovery lost its lock and will start again)
    games: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # games whose rebuild raised (no marker then)
    members: int = 0
    seconds: float = 0.0
    data_lost: bool = True  # False: the first start (no accepted result in the ledger yet)


def boards_recover_if_lost() -> RecoveryReport | None:
    """The check: None while the marker is there (or another recovery runs), else the recovery's
    report once every game is rebuilt. Raises RedisError when Redis is down."""
    if epoch_get() is not None:
        return None
    with lock_held(recover_lock_key(), ttl_s=RECOVER_LOCK_TTL_S) as lock:
        if lock is None or epoch_get() is not None:  # another recovery runs, or has just finished
            return None
        clock = time.monotonic()
        report = RecoveryReport(data_lost=ScoreEvent.objects.filter(status=EventStatus.ACCEPTED).exists())
        games = games_all()
        if report.data_lost:
            logger.warning(
                "the boards marker is missing: Redis lost its data (or this version starts for the first time); "
                "rebuilding the live boards of %d games from the ledger, reads answer from what Redis holds "
                "until each game is swapped in",
                len(games),
            )
        try:
            for game in games:
                lock.check()
                try:
                    rebuilt = boards_rebuild(game=game, live_only=True)
                except LockLost:
                    raise
                except Exception:  # the other games still come back; the marker waits for this one
                    logger.exception("recovery: the rebuild of %s failed; the next check tries again", game.slug)
                    report.failed.append(game.slug)
                    continue
                report.games.append(game.slug)
                report.members += rebuilt.members
            lock.check()
        except LockLost:
            logger.warning("Redis lost its data again during the recovery: it starts over at the next check")
            return report
        if report.failed:
            return report
        marker = f"{timezone.now().isoformat()} {uuid.uuid4().hex}"
        if not epoch_confirm(lock_token=lock.token, value=marker):
            logger.warning("Redis lost its data again during the recovery: it starts over at the next check")
            return report
        report.marker = marker
        report.seconds = round(time.monotonic() - clock, 2)
    if report.data_lost:
        count("boards_recoveries")
        gauge_set("boards_recovery_ms", int(report.seconds * 1000))
        logger.warning(
            "boards recovered: %d games, %d members rebuilt from the ledger in %.2f s (marker %s)",
            len(report.games),
            report.members,
            report.seconds,
            marker,
        )
    else:
        logger.info("boards marker written (no accepted result in the ledger yet): %s", marker)
    return report


@dataclass
class RealignReport:
    keys_dropped: int = 0
    broker_keys_dropped: int = 0
    recovery: RecoveryReport | None = None
    ledger_events: int = 0
    ledger_max_id: int = 0


def redis_realign() -> RealignReport:
    """Bring Redis in line with the ledger as it is now (after PostgreSQL was restored from a backup,
    or pointed at another database), with the service stopped: every key of this deployment goes
    (boards, dedup markers, names, catalogs, caches, live-push state, the apply queue and the tasks
    delivered from it), except the metrics' counters; then every game's live boards are rebuilt from
    the ledger here, waited for, and the boards marker written (the recovery above). Results the
    restore dropped are then nowhere in Redis, so the match servers' resends are applied like new
    ones; results accepted before the backup and not applied yet are on the boards and marked
    applied. Keys of another deployment on the same Redis are not touched."""
    report = RealignReport()
    report.keys_dropped = deployment_keys_drop(keep=[metrics_key()])
    # The broker may be another Redis: its apply queue named events of the old ledger.
    broker = client_for(str(settings.CELERY_BROKER_URL))
    report.broker_keys_dropped = int(broker.unlink(*(broker_key(k) for k in BROKER_QUEUE_KEYS)))
    report.ledger_events = ScoreEvent.objects.count()
    report.ledger_max_id = ScoreEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    report.recovery = boards_recover_if_lost()
    if report.recovery is None or not report.recovery.marker:
        raise RuntimeError(f"the rebuild did not complete ({report.recovery}); run the command again")
    # The dedup check starts after the ledger as it is now (unreflected.py).
    client().set(unreflected_mark_key(), report.ledger_max_id)
    logger.warning(
        "Redis realigned with the ledger: %d keys dropped (%d of the broker), %d games rebuilt (%d members) in %.2f s",
        report.keys_dropped,
        report.broker_keys_dropped,
        len(report.recovery.games),
        report.recovery.members,
        report.recovery.seconds,
    )
    return report


# The apply queue, the tasks delivered from it and not acknowledged, and their index (kombu's keys).
BROKER_QUEUE_KEYS = ("scoring", "unacked", "unacked_index", "unacked_mutex")
