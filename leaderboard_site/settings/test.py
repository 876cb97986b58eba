"""Test settings: a Redis of the run's own on a free port, and pytest-django's own database."""

import os

from leaderboard_site.testing_redis import start_private_redis

os.environ["REDIS_URL"] = start_private_redis()

from .base import *  # noqa: F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = False
# The single-result fast path runs its groups in the calling thread here, as Django's test client
# runs async views: the test's transaction (and its data) lives on that thread's connection.
SINGLES_IN_CALLER_THREAD = True
