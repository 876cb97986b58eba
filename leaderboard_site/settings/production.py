"""Production: `DJANGO_SETTINGS_MODULE=leaderboard_site.settings.production`.

The base settings with the values a public deployment needs; `manage.py check --deploy` passes
with no warning. It refuses to start without a real secret key and the host names it serves.
The service sits behind a TLS-terminating proxy (docs/operations.md): uvicorn takes the scheme and
client address from the proxy's X-Forwarded-Proto and X-Forwarded-For when the request comes from
FORWARDED_ALLOW_IPS, so Django sees https. A plain-http request that reaches Django is redirected;
the proxy redirects the rest (the fast paths answer before Django's middleware).
"""

import os

from .env import ConfigError, env_bool, env_int

_secret = os.environ.get("DJANGO_SECRET_KEY", "")
if len(_secret) < 50 or len(set(_secret)) < 5 or _secret.startswith("django-insecure-"):
    raise ConfigError(
        "DJANGO_SECRET_KEY must be set to a random string of at least 50 characters in production "
        "(python -c 'import secrets; print(secrets.token_urlsafe(64))')"
    )
if not os.environ.get("DJANGO_ALLOWED_HOSTS", "").strip():
    raise ConfigError("DJANGO_ALLOWED_HOSTS must list the host names the service answers for in production")
if env_bool("DJANGO_DEBUG", False):
    raise ConfigError("DJANGO_DEBUG must be off in production")

from .base import *  # noqa: E402,F403

DEBUG = False
SECRET_KEY = _secret

SECURE_SSL_REDIRECT = True
# The probes of a load balancer or of the supervisor may come over plain http from inside.
# /metrics too: Prometheus scrapes each web host directly, from inside (with its bearer token).
SECURE_REDIRECT_EXEMPT = [r"^health/", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 365 * 86400)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
# Allows (does not make) a submission to the browsers' preload list.
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# /metrics wants `Authorization: Bearer <METRICS_TOKEN>`; without METRICS_TOKEN set it answers 403
# to everyone (settings/observability.py).
METRICS_PROTECTED = True
