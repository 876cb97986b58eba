"""Deployments sharing one Redis stay apart (issue 13): the key prefix belongs to a deployment and
by default is named after its database; the Celery queue and the channel layer sit under it too."""

import json
import subprocess
import sys

import pytest

from common.testing import ROOT, process_env
from leaderboard_site.settings.env import ConfigError, database_from_url, deployment_prefix


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


def test_a_formations_multi_host_url_is_read_by_libpq_and_keeps_one_prefix_whichever_node_is_primary():
    url = "postgresql://lb@10.0.0.1:5441,10.0.0.2:5442/leaderboard?target_session_attrs=read-write&connect_timeout=2"
    db = database_from_url(url)
    assert (db["HOST"], db["PORT"], db["NAME"], db["USER"]) == ("10.0.0.1,10.0.0.2", "5441,5442", "leaderboard", "lb")
    assert db["OPTIONS"] == {"target_session_attrs": "read-write", "connect_timeout": "2"}
    # The prefix names the formation, not the node that is primary now, nor the URL's order.
    prefix = deployment_prefix(url)
    assert prefix.startswith("lb-leaderboard-") and ":" not in prefix
    assert prefix == deployment_prefix("postgresql://lb@10.0.0.2:5442,10.0.0.1:5441/leaderboard")
    assert prefix != deployment_prefix("postgresql://lb@10.0.0.1:5441/leaderboard")
    # A host without its port has the default one, as libpq reads it; a single host's prefix is
    # what it always was (the boards of a deployment stay where they are).
    assert database_from_url("postgresql://lb@h1,h2:6000/db")["PORT"] == "5432,6000"
    assert deployment_prefix("postgresql://lb@db1:5432/leaderboard") == "lb-leaderboard-c55b92"


def test_a_database_url_libpq_would_refuse_fails_at_start_up():
    with pytest.raises(ConfigError, match="libpq"):
        database_from_url("postgresql://lb@db1/leaderboard?target_sesion_attrs=read-write")  # a typo
    with pytest.raises(ConfigError, match="postgresql://"):
        database_from_url("mysql://lb@db1/leaderboard")


@pytest.mark.django_db
def test_a_process_started_on_a_multi_host_url_has_its_settings():
    url = "postgresql://postgres@127.0.0.1:5441,127.0.0.1:5442/staging?target_session_attrs=read-write"
    script = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "d = s.DATABASES['default']; print(json.dumps([d['HOST'], d['PORT'], d['OPTIONS'], s.REDIS_KEY_PREFIX]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=process_env(DATABASE_URL=url, REDIS_KEY_PREFIX=""),
        capture_output=True,
        text=True,
        check=True,
    )
    host, port, options, prefix = json.loads(out.stdout.strip().splitlines()[-1])
    assert (host, port, prefix) == ("127.0.0.1,127.0.0.1", "5441,5442", deployment_prefix(url))
    # The URL's libpq parameters join the pool's options, not replace them.
    assert options["target_session_attrs"] == "read-write" and options["pool"]["timeout"] > 0


def _options_of(**env: str) -> subprocess.CompletedProcess:
    script = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps(s.DATABASES['default']['OPTIONS'].get('options')))"
    )
    return subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=process_env(**env), capture_output=True, text=True
    )


def test_the_sessions_page_price_joins_the_urls_options_and_a_bad_one_stops_the_start():
    """DATABASE_RANDOM_PAGE_COST goes into libpq's `options` before the URL's own; a URL that sets
    the price itself wins; a value PostgreSQL would refuse stops the process at start-up instead of
    failing every connection."""
    url = "postgresql://postgres@127.0.0.1:5432/x?options=-c%20statement_timeout%3D5s"
    done = _options_of(DATABASE_URL=url)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == "-c random_page_cost=1.1 -c statement_timeout=5s"
    own = "postgresql://postgres@127.0.0.1:5432/x?options=-c%20random_page_cost%3D2"
    assert json.loads(_options_of(DATABASE_URL=own).stdout.strip().splitlines()[-1]) == "-c random_page_cost=2"
    off = _options_of(DATABASE_URL="postgresql://postgres@127.0.0.1:5432/x", DATABASE_RANDOM_PAGE_COST="")
    assert json.loads(off.stdout.strip().splitlines()[-1]) is None
    bad = _options_of(DATABASE_RANDOM_PAGE_COST="fast")
    assert bad.returncode != 0 and "DATABASE_RANDOM_PAGE_COST must be a positive number" in bad.stderr, bad.stderr
