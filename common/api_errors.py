"""Every API error body is `{"detail": ..., "code": ...}` plus DRF's field errors (docs/api.md)."""

import logging
from dataclasses import dataclass
from typing import Any

import psycopg
import redis
from django.db import InterfaceError, OperationalError
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An error with an explicit status and machine code, e.g. ApiError(409, "season_closed", "...")."""

    def __init__(self, status_code: int, code: str, detail: str, headers: dict[str, str] | None = None):
        self.status_code = status_code
        self.code = code
        self.extra_headers = headers or {}
        super().__init__(detail=detail, code=code)


@dataclass(frozen=True)
class Problem:
    """An error an operation can give: its status, its machine code and what it means (the OpenAPI
    document lists each operation's). `PROBLEM(detail)` is the ApiError to raise."""

    status: int
    code: str
    meaning: str
    detail: str = ""  # the human text, for a problem that always says the same

    def __call__(self, detail: str = "", headers: dict[str, str] | None = None) -> ApiError:
        return ApiError(self.status, self.code, detail or self.detail, headers)

    def body(self) -> dict[str, Any]:
        return error_body(detail=self.detail, code=self.code)


class ErrorSerializer(serializers.Serializer[Any]):  # the error shape, for the OpenAPI schema
    detail = serializers.CharField()
    code = serializers.CharField(help_text="Machine code, e.g. invalid, season_closed, idempotency_conflict.")


def error_body(*, detail: str, code: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if fields:
        body.update(fields)
    body["detail"] = detail
    body["code"] = code
    return body


LEDGER_UNAVAILABLE = "The ledger (database) is unavailable; nothing was stored."
BOARDS_UNAVAILABLE = "The board store (Redis) is unavailable."
RETRY_AFTER_S = 5  # the Retry-After of a 503: a restart or failover takes seconds
LEDGER_DOWN = Problem(503, "ledger_unavailable", "PostgreSQL cannot be reached; nothing was stored", LEDGER_UNAVAILABLE)
BOARDS_DOWN = Problem(503, "boards_unavailable", "Redis cannot be reached", BOARDS_UNAVAILABLE)
NOT_FOUND = Problem(404, "not_found", "no such game (or player)")
THROTTLED = Problem(429, "throttled", "over the rate limit; `Retry-After` says when to try again")


def ledger_unreachable(exc: BaseException) -> bool:
    """Whether a database error says the ledger cannot be reached (stopped, restarting, a dropped
    connection, no connection to be had in time), not something that happened inside a reachable
    one (a deadlock, a lock, a conflict): a request then answers 503 at once instead of trying again.
    """
    if isinstance(exc, InterfaceError):
        return True
    cause = exc.__cause__ if isinstance(exc, OperationalError) else exc
    if not isinstance(cause, psycopg.OperationalError):
        return False
    state = cause.sqlstate  # None: no answer from the server at all (refused, closed, pool timeout)
    return state is None or state.startswith("08") or state in {"57P01", "57P02", "57P03", "53300"}


def error_answer(exc: ApiError) -> tuple[int, dict[str, Any], dict[str, str]]:
    """An ApiError's status, body and headers: Django's views (`exception_handler`) and the fast
    entrances (common/asgi.py `respond_error`) answer it so."""
    return exc.status_code, error_body(detail=str(exc.detail), code=exc.code), exc.extra_headers


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("ledger unavailable: %s", exc)
        return Response(LEDGER_DOWN.body(), status=LEDGER_DOWN.status, headers={"Retry-After": str(RETRY_AFTER_S)})
    if isinstance(exc, redis.RedisError):
        logger.warning("redis unavailable: %s", exc)
        return Response(BOARDS_DOWN.body(), status=BOARDS_DOWN.status, headers={"Retry-After": str(RETRY_AFTER_S)})
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ApiError):
        _, response.data, headers = error_answer(exc)
        for name, value in headers.items():
            response[name] = value
        return response
    if isinstance(exc, exceptions.ValidationError):
        fields = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        response.data = error_body(detail="Invalid input.", code="invalid", fields=fields)
        return response
    if isinstance(exc, exceptions.Throttled):
        wait = int(getattr(exc, "wait", None) or 1)
        response["Retry-After"] = str(max(1, wait))
    code = exc.get_codes() if isinstance(exc, exceptions.APIException) else "error"
    if not isinstance(code, str):
        code = "error"
    detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
    response.data = error_body(detail=str(detail), code=code)
    return response
