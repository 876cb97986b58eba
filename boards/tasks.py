"""Beat task of the live boards."""

from celery import shared_task

from .events import publish_live


@shared_task(name="boards.publish_live", ignore_result=True, expires=5)
def publish_live_task() -> int:
    return publish_live()


@shared_task(name="boards.histograms", ignore_result=True, expires=120)
def histograms_task() -> int:
    from .events import histograms_refresh

    return histograms_refresh()
