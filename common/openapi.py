"""Parameters every part of the OpenAPI document shares: path parameters with the formats of the
contract (docs/api.md), so the document says exactly what the service accepts."""

from typing import Any

from drf_spectacular.utils import OpenApiParameter

from .formats import GAME_SLUG_RE, PLAYER_ID_RE
from .request_ids import HEADER, MAX_LENGTH

REQUEST_ID_PATTERN = f"^[A-Za-z0-9._:-]{{1,{MAX_LENGTH}}}$"


def path_param(name: str, pattern: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(
        name, {"type": "string", "pattern": pattern}, OpenApiParameter.PATH, required=True, description=description
    )


GAME_PARAM = path_param("game", GAME_SLUG_RE.pattern, "The game's slug.")
PLAYER_PARAM = path_param("player_id", PLAYER_ID_RE.pattern, "A player id.")
FRIEND_PARAM = path_param("friend_id", PLAYER_ID_RE.pattern, "The friend's player id.")
MATCH_PARAM = OpenApiParameter(
    "match_id", {"type": "string", "format": "uuid"}, OpenApiParameter.PATH, required=True, description="A UUID."
)


def closed_request_bodies(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: request bodies take no field the schema does not name
    (`additionalProperties: false`), as the service answers an unknown field with a 400 (no mass
    assignment: docs/api.md)."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and component.get("type") == "object" and "properties" in component:
            component["additionalProperties"] = False
    return result


def request_id_headers(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every answer of every operation carries `X-Request-ID`
    (common/observability.py puts it on fast-path and Django answers alike)."""
    header = {
        "description": (
            "The request's own X-Request-ID when it sent one of at most 64 letters, digits, '.', '_', ':' "
            "or '-', else one the service made (32 hex digits). The web's and the worker's log lines carry it."
        ),
        "schema": {"type": "string", "maxLength": MAX_LENGTH, "pattern": REQUEST_ID_PATTERN},
    }
    result.setdefault("components", {}).setdefault("headers", {})["RequestId"] = header
    ref = {"$ref": "#/components/headers/RequestId"}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for response in operation.get("responses", {}).values():
                response.setdefault("headers", {})[HEADER] = ref
    return result
