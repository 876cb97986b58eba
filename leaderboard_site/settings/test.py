"""Test settings: a Redis of the run's own on a free port, pytest-django's own database, and a
metrics folder of the run's own (never the one of a `make run` on the same checkout)."""

import atexit
import os
import shutil
import tempfile

from leaderboard_site.testing_redis import start_private_redis

os.environ["REDIS_URL"] = start_private_redis()
# Every process the tests start (web, worker) inherits it: their metrics show on each other's /metrics.
os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="lb-test-metrics-")
# One Redis key prefix for the test run and every process it starts (they inherit the environment);
# a test of the default derived from the database passes REDIS_KEY_PREFIX="".
os.environ.setdefault("REDIS_KEY_PREFIX", "lbtest")

from .base import *  # noqa: F403

atexit.register(shutil.rmtree, os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = False
# The single-result fast path runs its groups in the calling thread here, as Django's test client
# runs async views: the test's transaction (and its data) lives on that thread's connection.
SINGLES_IN_CALLER_THREAD = True
DJANGO_IN_CALLER_THREAD = True  # and so do Django's requests (leaderboard_site/django_handler.py)
