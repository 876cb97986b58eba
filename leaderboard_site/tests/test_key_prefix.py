"""Deployments sharing one Redis stay apart (issue 13): the key prefix belongs to a deployment and
by default is named after its database; the Celery queue and the channel layer sit under it too."""

import json
import subprocess
import sys

import pytest

from common.testing import ROOT, process_env
from leaderboard_site.settings.env import deployment_prefix


def test_the_default_prefix_is_named_after_the_database_and_differs_between_databases():
    production = deployment_prefix("postgresql://lb@db1:5432/leaderboard")
    assert production == deployment_prefix("postgresql://other-user:secret@db1:5432/leaderboard")  # not the user
    assert production.startswith("lb-leaderboard-") and ":" not in production
    assert production != deployment_prefix("postgresql://lb@db2:5432/leaderboard")  # same name, another host
    assert production != deployment_prefix("postgresql://lb@db1:5432/leaderboard_staging")
    assert ":" not in deployment_prefix("postgresql://lb@db1:5432/we%3Aird%2Aname")


def settings_of(**env: str) -> dict:
    script = (
        "import json, django; django.setup(); from django.conf import settings as s; print(json.dumps({"
        "'prefix': s.REDIS_KEY_PREFIX, 'celery': s.CELERY_BROKER_TRANSPORT_OPTIONS['global_keyprefix'], "
        "'layer': s.CHANNEL_LAYERS['default']['CONFIG']['prefix'], 'cache': s.CACHES['default']['KEY_PREFIX']}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=process_env(**env), capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.django_db  # process_env reads the test database's settings
def test_every_redis_user_of_a_process_takes_the_deployments_prefix():
    derived = settings_of(REDIS_KEY_PREFIX="", DATABASE_URL="postgresql://postgres@127.0.0.1:5432/staging")
    prefix = deployment_prefix("postgresql://postgres@127.0.0.1:5432/staging")
    assert derived == {
        "prefix": prefix,
        "celery": f"{prefix}:celery:",
        "layer": f"{prefix}:asgi",
        "cache": f"{prefix}:cache",
    }
    assert settings_of(REDIS_KEY_PREFIX="prod-eu")["celery"] == "prod-eu:celery:"
