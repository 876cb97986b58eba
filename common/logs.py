"""Log formats (settings LOGGING, `LOG_FORMAT`): one JSON object per line (the default, for a log
collector), or plain text for a person at a terminal. Both carry the request id when there is one
(common/request_ids.py). The Celery worker and beat log through the same configuration
(`celery_logging_setup`)."""

import logging
import logging.config
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter


def json_formatter() -> logging.Formatter:
    """`{"time": ISO 8601 UTC, "level", "logger", "message", ...extra fields, "request_id"}`."""
    return JsonFormatter(
        "%(levelname)s %(name)s %(message)s",
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp="time",
        reserved_attrs=[*RESERVED_ATTRS, "color_message"],  # uvicorn's copy of the message, with ANSI colours
    )


class TextFormatter(logging.Formatter):
    """`time LEVEL logger message`, then ` request_id=...` when the record has one."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        one = getattr(record, "request_id", None)
        several = getattr(record, "request_ids", None)
        if one:
            return f"{text} request_id={one}"
        if several:
            return f"{text} request_ids={','.join(several)}"
        return text


def celery_logging_setup(loglevel: Any = None, **_: Any) -> None:
    """Celery's setup_logging signal (worker and beat): Django's LOGGING instead of Celery's own
    handlers, so their lines have the web's format and request ids. Celery's `-l` sets the level
    of Celery's own loggers; the service's follow LOG_LEVEL, as in the web."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
    if loglevel:
        logging.getLogger("celery").setLevel(loglevel)
