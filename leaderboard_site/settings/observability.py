"""Logs and metrics: the log format, the request metrics' folder, who may read /metrics."""

import os
from pathlib import Path

from .env import env_bool, env_choice, env_str

_ROOT = Path(__file__).resolve().parent.parent.parent

# One JSON object per line (json, the default: for a log collector) or plain text (text: for a
# person at a terminal; `make run` picks it when its output is a terminal and LOG_FORMAT is unset,
# scripts/run.sh). Both carry the request id (common/request_ids.py). Celery's worker and beat log
# through this configuration too (common/logs.py).
LOG_FORMAT = env_choice("LOG_FORMAT", "json", ("json", "text"))
# `make run`'s demo stream is on (scripts/run.sh exports DEMO, every process inherits it): the web's
# line per demo match and the worker's per apply task of demo results are left out, the stream
# summarises them (common.logs.DemoWritesQuiet). Off unless set: in production a client could send
# an id that looks like the demo's.
_DEMO = env_bool("DEMO", False)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "common.request_ids.RequestIdFilter"},
        "demo_writes_quiet": {"()": "common.logs.DemoWritesQuiet"},
    },
    "formatters": {
        "json": {"()": "common.logs.json_formatter"},
        "text": {"()": "common.logs.TextFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.request": {"level": "ERROR"},
        "daphne": {"level": "WARNING"},
        # httpx's line per request (the webhook dispatcher's tries): events/dispatcher.py logs the
        # tries that fail, and the admin lists every one.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # uvicorn's own lines (a web process starting, an error in the application) in this format
        # too; its master process, which never loads Django, keeps uvicorn's plain text.
        "uvicorn": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO"), "propagate": False},
        # Off, as `--no-access-log` has it (configuring "uvicorn" above would turn it on again): the
        # request metrics and the write path's own lines say what an access log would.
        "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        # The web's line per write request (scoring/reporting.py) and the worker's per apply task
        # (scoring/tasks.py): under the demo alone, its summary instead.
        "scoring.reporting": {"filters": ["demo_writes_quiet"] if _DEMO else []},
        "scoring.tasks": {"filters": ["demo_writes_quiet"] if _DEMO else []},
    },
}

# Each process of this host writes its metrics here (prometheus-client's multiprocess mode); any
# web process's /metrics reads them all. One folder per host, never shared between hosts; emptied
# when the service starts (scripts/run.sh; systemd: RuntimeDirectory, deploy/systemd/). Set in the
# environment here so that every process this one starts finds the same folder.
PROMETHEUS_MULTIPROC_DIR = env_str("PROMETHEUS_MULTIPROC_DIR", str(_ROOT / "var" / "metrics"))
os.environ["PROMETHEUS_MULTIPROC_DIR"] = PROMETHEUS_MULTIPROC_DIR

# /metrics: open unless METRICS_PROTECTED (production) or a token is set; then it wants
# `Authorization: Bearer <METRICS_TOKEN>`, and with no token set it answers 403 to everyone.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
METRICS_PROTECTED = False
