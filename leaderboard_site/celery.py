"""The Celery app. Tasks publish to the nameless exchange, so a Redis that lost its data (and
with it kombu's binding sets, kombu #1063) still routes new tasks to the `scoring` queue."""

import os

from celery import Celery
from kombu import Exchange, Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")

app = Celery("leaderboard_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_queues=[Queue("scoring", Exchange(""), routing_key="scoring")],
    task_default_queue="scoring",
    task_default_exchange="",
    task_default_routing_key="scoring",
)
app.autodiscover_tasks()


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
        "boards.seasons_archive": {"task": "boards.seasons_archive", "schedule": 60.0, "options": {"expires": 120}},
        "scoring.anomalies": {"task": "scoring.anomalies", "schedule": 60.0, "options": {"expires": 120}},
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
        # One publisher for all web processes: each changed board's top 10, at most once a second
        # (ticks of 0.25 s, so a busy board is pushed every 1 to 1.25 s).
        "boards.publish_live": {"task": "boards.publish_live", "schedule": 0.25, "options": {"expires": 5}},
    }


app.conf.beat_schedule = _beat_schedule()
