"""Core Django settings, read from the environment with working defaults (12-factor)."""

from pathlib import Path

from .env import (
    DEFAULT_DATABASE_URL,
    ConfigError,
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent

DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "dev-only-insecure-key-change-me-in-production-0123456789")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["*"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "seasons",
    "events",
    "anticheat",
    "scoring",
    "boards",
    "competitions",
]

MIDDLEWARE = [
    # First: it names the route of every answer for the request metrics (common/observability.py).
    "common.observability.route_name_middleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files (the pages' assets, the admin's, Swagger UI's from the sidecar: no CDN).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its 429 page (settings/auth.py).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "leaderboard_site.urls"
ASGI_APPLICATION = "leaderboard_site.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# DATABASE_URL may name every node of a failover formation (docs/operations.md, "High
# availability"): `postgresql://u@h1:p1,h2:p2/name?target_session_attrs=read-write`. Its query's
# libpq parameters join OPTIONS (connect_timeout there wins over DATABASE_CONNECT_TIMEOUT_S).
_DATABASE = database_from_url(env_str("DATABASE_URL", DEFAULT_DATABASE_URL))
_DATABASE_OPTIONS = _DATABASE.pop("OPTIONS")
assert isinstance(_DATABASE_OPTIONS, dict)
# The planner's price of a page read out of order, for this service's sessions (libpq's `options`,
# before any the URL gives). PostgreSQL's default, 4, prices a disk that seeks; the ledger's working
# set is cached and on SSD, where 1.1 is the usual setting. With 4 the worker's lookup of a task's
# 2,000 event ids in a 200,000-row table (its competitions' results) was a parallel sequential
# scan, 20-30 ms; by the unique index 1-4 ms (docs/performance.md, "Leagues: ingest", fifth
# round). Empty: the server's own setting; one the URL's `options` sets wins.
DATABASE_RANDOM_PAGE_COST = env_str("DATABASE_RANDOM_PAGE_COST", "1.1")
_url_options = str(_DATABASE_OPTIONS.get("options", ""))
if DATABASE_RANDOM_PAGE_COST:  # a value PostgreSQL refuses would fail every connection, not the start
    try:
        _price = float(DATABASE_RANDOM_PAGE_COST)
    except ValueError:
        _price = 0.0
    if not _price > 0:
        raise ConfigError(f"DATABASE_RANDOM_PAGE_COST must be a positive number, got {DATABASE_RANDOM_PAGE_COST!r}")
if DATABASE_RANDOM_PAGE_COST and "random_page_cost" not in _url_options:
    _DATABASE_OPTIONS["options"] = f"-c random_page_cost={DATABASE_RANDOM_PAGE_COST} {_url_options}".strip()

DATABASES = {
    "default": {
        **_DATABASE,
        # A pool per process (psycopg_pool, Django 5.1+): a request borrows a connection and gives
        # it back, instead of opening one (persistent per-thread connections pile up under ASGI, so
        # CONN_MAX_AGE stays 0, as the pool requires).
        "CONN_MAX_AGE": 0,
        "OPTIONS": {
            "connect_timeout": env_int("DATABASE_CONNECT_TIMEOUT_S", 3),
            **_DATABASE_OPTIONS,
            "pool": {
                "min_size": env_int("DATABASE_POOL_MIN", 1),
                "max_size": env_int("DATABASE_POOL_MAX", 10),  # above DJANGO_CONCURRENCY: room for jobs
                # A request waits this long for a connection, then answers 503 (the ledger is
                # unavailable). A web process's requests never use all of the pool at once, so a
                # wait means a connection being opened (milliseconds) or a database that is down:
                # the 503 comes within a second, whichever way the request went (docs/api.md).
                "timeout": env_float("DATABASE_POOL_TIMEOUT_S", 0.5),
                # A failed (re)connection is retried by the pool with a backoff that starts at 1 s
                # and doubles; it gives up after this, and the next request that needs a connection
                # tries at once. So a database back after a restart is used again within about
                # this long, not after the backoff (measured: 4 s after a 3 s restart).
                "reconnect_timeout": env_float("DATABASE_POOL_RECONNECT_S", 0.5),
            },
        },
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Requests of one web process inside Django at once (leaderboard_site/admission.py); the rest wait
# on the event loop. A few overlap one request's database and Redis waits with another's Python.
DJANGO_CONCURRENCY = env_int("DJANGO_CONCURRENCY", 4)
# Django's requests run on a pool of DJANGO_CONCURRENCY threads (leaderboard_site/django_handler.py);
# the tests run them on the calling thread, whose connection holds the test's transaction.
DJANGO_IN_CALLER_THREAD = False

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Serve from the finders too, so a checkout works before (or without) collectstatic.
WHITENOISE_USE_FINDERS = True

if not DEBUG:
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"

from .auth import *  # noqa: E402,F403
from .celery import *  # noqa: E402,F403
from .channels import *  # noqa: E402,F403
from .drf import *  # noqa: E402,F403
from .events import *  # noqa: E402,F403
from .observability import *  # noqa: E402,F403
from .redis import *  # noqa: E402,F403
from .scoring import *  # noqa: E402,F403
