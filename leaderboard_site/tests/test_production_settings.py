"""The production profile (leaderboard_site/settings/production.py): `manage.py check --deploy`
passes with no warning, and it refuses to start without a real secret key or its host names."""

import os
import secrets
import subprocess
import sys

import pytest

from common.testing import ROOT

PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "leaderboard_site.settings.production",
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
    "DJANGO_ALLOWED_HOSTS": "leaderboard.example.com",
}


def manage(*args: str, **env: str | None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **PRODUCTION, **env}
    environ = {name: value for name, value in environ.items() if value is not None}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_gives_no_warning():
    done = manage("check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout
    assert "WARNINGS" not in done.stderr


def test_the_base_profile_is_not_fit_for_production():
    """The same check on the development defaults fails: the test above is not vacuous."""
    done = manage(
        "check", "--deploy", "--fail-level", "WARNING", DJANGO_SETTINGS_MODULE="leaderboard_site.settings.base"
    )
    assert done.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in done.stderr


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DJANGO_SECRET_KEY": None}, "DJANGO_SECRET_KEY"),
        ({"DJANGO_SECRET_KEY": "too-short-to-be-a-secret"}, "DJANGO_SECRET_KEY"),
        ({"DJANGO_SECRET_KEY": "django-insecure-" + secrets.token_urlsafe(64)}, "DJANGO_SECRET_KEY"),
        ({"DJANGO_ALLOWED_HOSTS": None}, "DJANGO_ALLOWED_HOSTS"),
        ({"DJANGO_DEBUG": "1"}, "DJANGO_DEBUG"),
    ],
)
def test_refuses_to_start_without_what_production_needs(env, named):
    done = manage("check", **env)
    assert done.returncode != 0
    assert "ConfigError" in done.stderr and named in done.stderr
