"""Celery tasks of the ledger. They take ids, are idempotent and have stable names."""

import logging
import time
from datetime import timedelta

from celery import Task, current_app, shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from redis import RedisError

from common.db import statistics_refresh
from common.redis import broker_key, client_for
from seasons.selectors import games_all

from .failover import failover_check, failover_noticed
from .freezing import seasons_freeze_due
from .league_closing import league_periods_close_due
from .ledger_partitions import partitions_ahead
from .moderation import anomalies_review
from .outbox import apply_records_prune, events_apply_by_id, outbox_vacuum, unapplied_due_now, unapplied_select
from .reconcile import boards_reconcile as reconcile
from .recovery import boards_recover_if_lost
from .tournament_freezing import tournament_periods_freeze_due
from .unreflected import unreflected_check

logger = logging.getLogger(__name__)

APPLY_QUEUE = "scoring"
RELAY_MAX_BACKLOG = 20


# A batch that found its game paused (a rebuild swapping its boards in, a few hundred ms) is tried
# again this long after, up to PAUSED_TRIES times (a pause's usual length several times over);
# after that the relay sends what is still unapplied (SCORING_RELAY_AFTER_S, seconds later).
PAUSED_RETRY_S = 0.25
PAUSED_TRIES = 20


@shared_task(bind=True, name="scoring.apply_events", acks_late=True, ignore_result=True, max_retries=PAUSED_TRIES)
def apply_events(self: "Task[[list[int]], dict[str, int]]", event_ids: list[int]) -> dict[str, int]:
    """Apply accepted events to the boards. A batch with events of a paused game (a rebuild) is
    retried PAUSED_RETRY_S later (Celery's retry), the whole of it: those applied meanwhile have
    left the outbox and are not read again; should the retry not reach the broker, Celery rejects
    the message and the relay sends the events. One log line per task, with the ids of the
    requests whose events it applied (its message's header, common/request_ids.py: bound while it
    runs)."""
    report = events_apply_by_id(
        event_ids=event_ids, dedup_ttl_s=settings.SCORING_DEDUP_TTL_S, chunk=settings.SCORING_APPLY_CHUNK
    )
    logger.info(  # the request ids come with the record (common/request_ids.py's filter)
        "apply task: %d events, %d applied, %d skipped, %d paused, %d overflow; max lag %.3f s",
        len(event_ids),
        report.applied,
        report.skipped,
        report.paused,
        report.overflow,
        report.lag_max_s,
        extra={"events": len(event_ids), **report.counts(), "lag_max_s": round(report.lag_max_s, 3)},
    )
    if report.paused and not self.request.called_directly and self.request.retries < PAUSED_TRIES:
        raise self.retry(countdown=PAUSED_RETRY_S)
    return report.counts()


def queue_backlog() -> int | None:
    """Tasks waiting in the apply queue: the length of its list on the broker (Redis, whatever
    CELERY_BROKER_URL names), under the deployment's prefix (common.redis.broker_key). Not kombu's
    passive queue_declare: it checks that the queue exists with an EXISTS that kombu does not
    prefix (global_keyprefix), so it would always find none. None when the broker cannot be reached."""
    try:
        return int(client_for(str(current_app.conf.broker_url)).llen(broker_key(APPLY_QUEUE)))
    except RedisError as exc:
        logger.debug("the broker is unavailable (%s)", exc)
        return None


@shared_task(name="scoring.relay_unapplied", acks_late=True, ignore_result=True)
def relay_unapplied() -> int:
    """The outbox sweep: re-enqueue accepted events still unapplied after SCORING_RELAY_AFTER_S.

    Each event is re-sent at most every 30 s, and not at all while the queue holds a backlog
    (those events are on their way), so a slow worker is not buried under duplicates. The outbox
    is vacuumed here when its applied (deleted) rows pile up and nothing else vacuumed it, the
    tables whose statistics nothing keeps are analyzed (common/db.py `statistics_refresh`), and
    the apply records older than the dedup markers' lifetime are deleted.
    """
    from .services import enqueue_apply

    apply_records_prune(before=timezone.now() - timedelta(seconds=settings.SCORING_DEDUP_TTL_S))
    outbox_vacuum()
    analyzed = statistics_refresh()
    if analyzed:
        logger.info("relay: analyzed %s (their statistics were stale)", ", ".join(analyzed))
    backlog = queue_backlog()
    if backlog is None:
        logger.warning("relay: the broker is unavailable; the outbox is sent again once it is back")
    if backlog is None or backlog > RELAY_MAX_BACKLOG:
        return 0  # the broker is down (nothing can be enqueued), or the queue is busy
    now = timezone.now()
    with transaction.atomic():
        ids = unapplied_select(
            older_than=now - timedelta(seconds=settings.SCORING_RELAY_AFTER_S),
            stale_enqueue_before=now - timedelta(seconds=30),
            limit=settings.SCORING_RELAY_BATCH,
        )
    if ids:
        logger.info("relay: re-enqueued %d unapplied events", len(ids))
        enqueue_apply(ids)
    return len(ids)


@shared_task(name="scoring.ledger_partitions", acks_late=True, ignore_result=True)
def ledger_partitions() -> list[str]:
    """Every hour: the ledger's partitions for this month and LEDGER_PARTITIONS_AHEAD months past
    it (ledger_partitions.py); the months it had to create."""
    return [m.strftime("%Y-%m") for m in partitions_ahead(now=timezone.now())]


@shared_task(name="scoring.anomalies", acks_late=True, ignore_result=True)
def anomalies() -> dict[str, int]:
    """Every minute: per game, results far above the cohort go to review (moderation.py)."""
    withheld = released = 0
    now = timezone.now()
    for game in games_all():
        w, r = anomalies_review(game=game, now=now)
        withheld, released = withheld + w, released + r
    return {"withheld": withheld, "released": released}


@shared_task(name="scoring.seasons_freeze", acks_late=True, ignore_result=True)
def seasons_freeze() -> int:
    """Every 15 s: freeze the seasons whose grace has ended (their final standings)."""
    frozen = seasons_freeze_due(now=timezone.now())
    if frozen:
        logger.info("seasons frozen: %s", frozen)
    return len(frozen)


@shared_task(name="scoring.tournaments_freeze", acks_late=True, ignore_result=True)
def tournaments_freeze() -> int:
    """Every few seconds: freeze the tournament periods whose grace has ended (their standings,
    their rewards, their `tournament.period_final` event)."""
    frozen = tournament_periods_freeze_due(now=timezone.now())
    if frozen:
        logger.info("tournament periods frozen: %d", frozen)
    return frozen


@shared_task(name="scoring.leagues_close", acks_late=True, ignore_result=True)
def leagues_close() -> int:
    """Every few seconds: end the league periods whose grace has ended (every cohort frozen once,
    the players moved, one `league.cohort_final` event per cohort; resumable: league_closing.py)."""
    closed = league_periods_close_due(now=timezone.now())
    if closed:
        logger.info("league periods ended: %d", closed)
    return closed


@shared_task(name="scoring.boards_recover", acks_late=True, ignore_result=True)
def boards_recover() -> int:
    """Every few seconds: when the boards marker is missing (Redis lost its data), rebuild every
    game's live boards from the ledger (recovery.py). Returns the number of games rebuilt."""
    try:
        report = boards_recover_if_lost()
        if failover_noticed():  # another Redis answers (failover.py): compare the boards in full
            unapplied_due_now()  # and the apply tasks the queue may have lost: sent again at once
            redis_failover_check.delay(time.time())
    except RedisError as exc:  # Redis is down (not empty): the next check asks again
        logger.info("boards check: Redis unavailable (%s)", exc.__class__.__name__)
        return 0
    return len(report.games) if report is not None else 0


@shared_task(name="scoring.redis_failover_check", acks_late=True, ignore_result=True)
def redis_failover_check(noticed_at: float) -> int:
    """After a Redis failover (failover.py): every game's boards compared with the ledger in full,
    and again every FAILOVER_RECHECK_S while players were passed over (results on their way), up to
    FAILOVER_CHECK_FOR_S after it was noticed. Returns the drifted entries repaired."""
    check = failover_check()
    if not check.complete and time.time() - noticed_at < settings.FAILOVER_CHECK_FOR_S:
        redis_failover_check.apply_async(args=(noticed_at,), countdown=settings.FAILOVER_RECHECK_S)
    return check.drift


@shared_task(name="scoring.boards_reconcile", acks_late=True, ignore_result=True)
def boards_reconcile() -> int:
    """On a schedule: the dedup markers of the results applied since the last run compared with the
    ledger (unreflected.py), then each game's boards compared with the ledger on a sample of
    players; what differs is repaired (reconcile.py). Returns the drifted entries and unreflected
    results found."""
    drift = 0
    try:
        drift += unreflected_check().missing
    except Exception:
        logger.exception("reconcile: the dedup marker check failed")
    for game in games_all():
        try:
            drift += reconcile(game=game, sample=settings.RECONCILE_SAMPLE).drift
        except Exception:  # one game's failure does not spare the others their check
            logger.exception("reconcile %s failed", game.slug)
    return drift
