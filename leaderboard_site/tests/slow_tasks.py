"""Tasks for the worker tests only (the worker imports them with --include): one that takes its
time, so that a broker loss finds it in flight, and one that leaves a mark when it runs."""

import time
from pathlib import Path

from celery import shared_task


@shared_task(name="tests.sleep", acks_late=True, ignore_result=True)
def sleep(seconds: float) -> None:
    time.sleep(seconds)


@shared_task(name="tests.touch", acks_late=True, ignore_result=True)
def touch(path: str) -> None:
    Path(path).touch()
