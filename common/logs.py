"""Log formats (settings LOGGING, `LOG_FORMAT`): one JSON object per line (the default, for a log
collector), or plain text for a person at a terminal. Both carry the request id when there is one
(common/request_ids.py). The Celery worker and beat log through the same configuration
(`celery_logging_setup`)."""

import logging
import logging.config
import os
import sys
from pathlib import Path
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

from .request_ids import request_ids

# The demo stream's requests send ids with this prefix (scoring/management/commands/stream_demo.py).
DEMO_REQUEST_ID_PREFIX = "demo-"


def json_formatter() -> logging.Formatter:
    """`{"time": ISO 8601 UTC, "level", "logger", "message", ...extra fields, "request_id"}`."""
    return JsonFormatter(
        "%(levelname)s %(name)s %(message)s",
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp="time",
        reserved_attrs=[*RESERVED_ATTRS, "color_message"],  # uvicorn's copy of the message, with ANSI colours
    )


def process_name() -> str:
    """Who writes the line: the name supervisord gives the process (web-0, worker, beat, demo: it
    sets SUPERVISOR_PROCESS_NAME for each program, and the worker's pool children inherit it), else
    the program's (manage, celery, serve)."""
    return os.environ.get("SUPERVISOR_PROCESS_NAME") or Path(sys.argv[0]).stem or "python"


class TextFormatter(logging.Formatter):
    """For a person at a terminal (`make run`):
    `13:50:32.619 INFO    web-0  scoring.reporting  write demo: 1 matches ...  request_id=9da0...`:
    the local time, the level, the process, the logger, the message, then the request id (or the
    ids, comma-separated) when the line belongs to requests. The event's other fields are in the
    message already; the JSON format has them one by one."""

    def __init__(self) -> None:
        name = process_name().replace("%", "%%")
        super().__init__(f"%(asctime)s.%(msecs)03d %(levelname)-7s {name:<6} %(name)s  %(message)s", "%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        one = getattr(record, "request_id", None)
        several = getattr(record, "request_ids", None)
        if one:
            return f"{text}  request_id={one}"
        if several:
            return f"{text}  request_ids={','.join(several)}"
        return text


class DemoWritesQuiet(logging.Filter):
    """`make run` with its demo stream (settings: DEMO on): the INFO lines written for requests that
    all come from the demo stream (ids `demo-...`) are left out; the stream logs what became of its
    matches itself, every 10 s, instead of a line per match. Warnings and errors always pass, and
    so does every line of anyone else's requests (scripts/submit.py, a browser). Never on in
    production: a client could pick such an id."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        ids = request_ids()
        return not ids or not all(one.startswith(DEMO_REQUEST_ID_PREFIX) for one in ids)


def celery_logging_setup(loglevel: Any = None, **_: Any) -> None:
    """Celery's setup_logging signal (worker and beat): Django's LOGGING instead of Celery's own
    handlers, so their lines have the web's format and request ids. Celery's `-l` sets the level
    of Celery's own loggers; the service's follow LOG_LEVEL, as in the web."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
    if loglevel:
        logging.getLogger("celery").setLevel(loglevel)
