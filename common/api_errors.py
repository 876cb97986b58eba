"""Every API error body is `{"detail": ..., "code": ...}` plus DRF's field errors (API.md)."""

import logging
from typing import Any

import psycopg
import redis
from django.db import InterfaceError, OperationalError
from rest_framework import exceptions, serializers, status
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


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("ledger unavailable: %s", exc)
        return Response(
            error_body(detail=LEDGER_UNAVAILABLE, code="ledger_unavailable"),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "5"},
        )
    if isinstance(exc, redis.RedisError):
        logger.warning("redis unavailable: %s", exc)
        return Response(
            error_body(detail="The board store (Redis) is unavailable.", code="boards_unavailable"),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "5"},
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ApiError):
        response.data = error_body(detail=str(exc.detail), code=exc.code)
        for name, value in exc.extra_headers.items():
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
