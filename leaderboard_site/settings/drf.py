"""Django REST framework and drf-spectacular (the OpenAPI schema, served without a CDN)."""

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "common.api_errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Leaderboard service API",
    "DESCRIPTION": (
        "Signed score submission for match servers and public, exact-rank board reads. "
        "See docs/api.md for the choices the contract leaves open."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Choice sets by names of their own: the events feed's `type` (events/types.py) rather than a
    # generic TypeEnum, and the one status set several tournament answers share.
    "ENUM_NAME_OVERRIDES": {
        "EventTypeEnum": "events.types.EVENT_TYPES",
        "PeriodStatusEnum": "competitions.serializers.PERIOD_STATUSES",
        # Two `scoring` fields (tournaments', leagues'): each set keeps a name of its own.
        "ScoringEnum": "competitions.league_serializers.TOURNAMENT_SCORINGS",
        "LeagueScoringEnum": "competitions.league_serializers.LEAGUE_SCORINGS",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "common.openapi.closed_request_bodies",
        "common.openapi.request_id_headers",
    ],
}
