"""Test settings: a Redis of the run's own on a free port, and pytest-django's own database."""

import os

from leaderboard_site.testing_redis import start_private_redis

os.environ["REDIS_URL"] = start_private_redis()

from .base import *  # noqa: F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = False
