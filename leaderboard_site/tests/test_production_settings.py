"""The production profile (leaderboard_site/settings/production.py): `manage.py check --deploy`
passes with no warning, it refuses to start without a real secret key or its host names, a web
process behind a TLS proxy redirects plain http, sends HSTS and secure cookies, and /metrics wants
its bearer token."""

import http.client
import os
import secrets
import subprocess
import sys

import pytest

from common.testing import ROOT, free_port, start_web, stop

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


@pytest.mark.django_db
def test_behind_a_tls_proxy_https_is_served_and_plain_http_redirected():
    port = free_port()
    web = start_web(port, **{**PRODUCTION, "DJANGO_ALLOWED_HOSTS": "leaderboard.example.com,127.0.0.1"})

    def get(path: str, **headers: str) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", path, headers={"Host": "leaderboard.example.com", **headers})
        response = conn.getresponse()
        response.read()
        conn.close()
        return response

    try:
        plain = get("/admin/login/")
        assert plain.status == 301
        assert plain.headers["Location"] == "https://leaderboard.example.com/admin/login/"
        # The proxy's X-Forwarded-Proto, trusted from FORWARDED_ALLOW_IPS (uvicorn's default: 127.0.0.1).
        proxied = get("/admin/login/", **{"X-Forwarded-Proto": "https"})
        assert proxied.status == 200
        assert proxied.headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
        assert "; Secure" in proxied.headers["Set-Cookie"] and proxied.headers["Set-Cookie"].startswith("csrftoken=")
        assert get("/health/live").status == 200  # probes over plain http from inside
        assert get("/admin/login/", Host="elsewhere.example.net").status == 400  # not in ALLOWED_HOSTS
    finally:
        stop(web)


@pytest.mark.django_db
def test_metrics_want_the_bearer_token_and_without_one_are_closed():
    """/metrics in production: `Authorization: Bearer <METRICS_TOKEN>` (over plain http from
    inside, as Prometheus scrapes a host: not redirected); no token configured, 403 for everyone."""
    hosts = {"DJANGO_ALLOWED_HOSTS": "leaderboard.example.com,127.0.0.1"}

    def get(port: int, **headers: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/metrics", headers={"Host": "leaderboard.example.com", **headers})
        response = conn.getresponse()
        body = response.read()
        conn.close()
        return response.status, body

    closed_port, open_port = free_port(), free_port()
    closed = start_web(closed_port, **{**PRODUCTION, **hosts, "METRICS_TOKEN": ""})
    try:
        assert get(closed_port)[0] == 403
        assert get(closed_port, Authorization="Bearer ")[0] == 403
    finally:
        stop(closed)
    token = secrets.token_urlsafe(32)
    protected = start_web(open_port, **{**PRODUCTION, **hosts, "METRICS_TOKEN": token})
    try:
        assert get(open_port)[0] == 401
        assert get(open_port, Authorization=f"Bearer {token[:-1]}")[0] == 401
        status, body = get(open_port, Authorization=f"Bearer {token}")
        assert status == 200 and b"leaderboard_http_request_duration_seconds_bucket" in body
    finally:
        stop(protected)
