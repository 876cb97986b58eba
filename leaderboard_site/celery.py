"""The Celery app. Tasks publish to the nameless exchange, so a Redis that lost its data (and
with it kombu's binding sets, kombu #1063) still routes new tasks to the `scoring` queue."""

import functools
import logging
import os
from typing import Any

from celery import Celery
from celery.beat import PersistentScheduler, SchedulingError
from celery.signals import before_task_publish, setup_logging, task_postrun, task_prerun
from celery.worker.consumer import Consumer as CeleryConsumer
from django import db
from kombu import Connection, Exchange, Queue
from kombu.exceptions import OperationalError as KombuOperationalError

from common import logs, request_ids
from common.outage import OutageLog
from leaderboard_site.worker_steps import PoolKeeper

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")

logger = logging.getLogger(__name__)


def _every_second(conn: Connection) -> Connection:
    """`conn`, trying a lost broker again every second: kombu waits 2, 4, 6, ... up to 30 s
    between attempts (no setting reaches them), so a Redis back after 15 s was used again 5 s
    later, after a minute up to 30 s later."""
    conn.ensure_connection = functools.partial(  # type: ignore[method-assign]
        conn.ensure_connection, interval_start=1, interval_step=1, interval_max=1
    )
    return conn


class Consumer(CeleryConsumer):
    """The worker's consumer (setting worker_consumer): reconnects every second, and survives the
    close of a connection the broker dropped.

    Celery 5.7 tears a lost connection down by collecting it (which lets go of its transport) and
    then closing it; with tasks in flight (acks_late) the close tries to give their messages back,
    which needs the transport: AttributeError ('NoneType' object has no attribute 'hostname', or
    'connection_errors' elsewhere), not one of the errors Celery ignores there, and the worker
    exited instead of reconnecting. Here a close that fails is logged and the reconnect goes on;
    those messages stay in the broker's unacked set and come back after the visibility timeout,
    their events sooner with the outbox relay (both idempotent).
    """

    def ensure_connected(self, conn: Connection) -> Any:
        return super().ensure_connected(_every_second(conn))

    def on_connection_error_after_connected(self, exc: Exception) -> None:
        if self.connection is not None:
            close = self.connection.close

            def close_quietly() -> None:
                try:
                    close()
                except Exception as error:
                    logger.warning("lost broker connection closed with an error (%r); reconnecting", error)

            self.connection.close = close_quietly  # type: ignore[method-assign]
        super().on_connection_error_after_connected(exc)


class Scheduler(PersistentScheduler):
    """Beat's scheduler (setting beat_scheduler), connecting every second when it starts while the
    broker is down. Once it runs, a send that fails for want of a broker is skipped (the next tick
    sends again) and logged once per outage, not with a traceback for each of the ~5 sends a
    second (12,000 log lines for 15 s)."""

    broker_outage = OutageLog(logger, "the broker (beat)", "scheduled tasks are skipped until it is back")

    def _ensure_connected(self) -> Any:
        _every_second(self.connection)
        return super()._ensure_connected()  # type: ignore[misc]  # not in the stubs

    def apply_async(self, entry: Any, producer: Any = None, advance: bool = True, **kwargs: Any) -> Any:
        try:
            result = super().apply_async(entry, producer, advance, **kwargs)
        except SchedulingError as exc:
            if not isinstance(exc.__context__, KombuOperationalError):
                raise
            self.broker_outage.failed(exc.__context__)
            return None
        self.broker_outage.succeeded()
        return result


app = Celery("leaderboard_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_queues=[Queue("scoring", Exchange(""), routing_key="scoring")],
    task_default_queue="scoring",
    task_default_exchange="",
    task_default_routing_key="scoring",
)
app.autodiscover_tasks()
app.steps["worker"].add(PoolKeeper)
# Worker and beat log as the web does (Django's LOGGING); a task carries the request ids it serves.
setup_logging.connect(logs.celery_logging_setup)
before_task_publish.connect(request_ids.task_headers_add)
task_prerun.connect(request_ids.task_ids_bind)
task_postrun.connect(request_ids.task_ids_unbind)


def _connections_back_to_pool(**_: Any) -> None:
    """After each task the database connection goes back to the process's pool, or away if it broke
    (what Django does after each request). Celery's own fixup would close the whole pool instead
    (CELERY_DB_REUSE_MAX, settings/celery.py), and with it kept, not closing at all would leave a
    connection broken by a database restart in use for every later task."""
    db.close_old_connections()


task_postrun.connect(_connections_back_to_pool)


def _beat_schedule() -> dict[str, dict[str, object]]:
    from django.conf import settings

    return {
        "scoring.relay_unapplied": {
            "task": "scoring.relay_unapplied",
            "schedule": settings.CELERY_BEAT_RELAY_INTERVAL_S,
            "options": {"expires": 30},
        },
        "seasons.rotate": {"task": "seasons.rotate", "schedule": 15.0, "options": {"expires": 60}},
        "scoring.seasons_freeze": {"task": "scoring.seasons_freeze", "schedule": 15.0, "options": {"expires": 60}},
        # A tournament period whose grace has ended: its standings frozen, its event published.
        "scoring.tournaments_freeze": {
            "task": "scoring.tournaments_freeze",
            "schedule": settings.TOURNAMENT_FREEZE_INTERVAL_S,
            "options": {"expires": settings.TOURNAMENT_FREEZE_INTERVAL_S * 4},
        },
        # A league period whose grace has ended: its cohorts frozen, its players moved (resumable).
        "scoring.leagues_close": {
            "task": "scoring.leagues_close",
            "schedule": settings.TOURNAMENT_FREEZE_INTERVAL_S,
            "options": {"expires": settings.TOURNAMENT_FREEZE_INTERVAL_S * 4},
        },
        # The ledger's monthly partitions, created months ahead (a month's first result never waits).
        "scoring.ledger_partitions": {
            "task": "scoring.ledger_partitions",
            "schedule": 3600.0,
            "options": {"expires": 600},
        },
        "boards.seasons_archive": {"task": "boards.seasons_archive", "schedule": 60.0, "options": {"expires": 120}},
        "scoring.anomalies": {"task": "scoring.anomalies", "schedule": 60.0, "options": {"expires": 120}},
        # Events older than EVENTS_KEEP_DAYS leave the feed (and their deliveries with them).
        "events.prune": {
            "task": "events.prune",
            "schedule": settings.EVENTS_PRUNE_INTERVAL_S,
            "options": {"expires": settings.EVENTS_PRUNE_INTERVAL_S},
        },
        # Redis came back empty (no boards marker): every game's live boards rebuilt from the ledger.
        "scoring.boards_recover": {
            "task": "scoring.boards_recover",
            "schedule": settings.BOARDS_RECOVER_CHECK_S,
            "options": {"expires": 10},
        },
        "scoring.boards_reconcile": {
            "task": "scoring.boards_reconcile",
            "schedule": settings.RECONCILE_INTERVAL_S,
            "options": {"expires": settings.RECONCILE_INTERVAL_S / 2},
        },
        # One publisher for all web processes: each changed board's top 10 to the web processes
        # every tick (0.25 s); each connection sends the newest it holds at most once a second
        # (boards/consumers.py), so a tick's lag adds at most 0.25 s to what a client sees.
        "boards.publish_live": {"task": "boards.publish_live", "schedule": 0.25, "options": {"expires": 5}},
    }


app.conf.beat_schedule = _beat_schedule()
