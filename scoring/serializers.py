"""Request and response shapes of the signed API (submissions, profiles, friends, own rank).

Submissions are validated by scoring/validation.py (strict types, fast enough for 100,000 results
a request); their serializers document the same contract for the schema. The profile endpoints
validate and render with these serializers.
"""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class ResultInSerializer(serializers.Serializer):
    player_id = serializers.RegexField(r"^[A-Za-z0-9_.:-]{1,64}$")
    points = serializers.IntegerField(min_value=0, help_text="Integer from 0 to the game's max points per match.")
    display_name = serializers.CharField(required=False, max_length=100)
    region = serializers.RegexField(r"^[a-z0-9-]{2,16}$", required=False)


class MatchInSerializer(serializers.Serializer):
    played_at = serializers.DateTimeField(help_text="ISO 8601 UTC; at most 60 s ahead of the server clock.")
    duration_s = serializers.IntegerField(min_value=0, max_value=604800)
    season = serializers.IntegerField(required=False, help_text="Default: the season containing played_at.")
    results = serializers.ListField(child=ResultInSerializer(), min_length=1, max_length=100)
    tournaments = serializers.ListField(
        child=serializers.RegexField(r"^[a-z0-9-]{1,40}$"),
        required=False,
        max_length=10,
        help_text="Tournaments of the game every result of the match is entered in (an unknown id is a 400).",
    )


class BatchMatchInSerializer(MatchInSerializer):
    match_id = serializers.UUIDField()


class BatchInSerializer(serializers.Serializer):
    matches = serializers.ListField(child=BatchMatchInSerializer(), min_length=1, max_length=1000)


class ResultOutcomeSerializer(serializers.Serializer):
    player_id = serializers.CharField()
    status = serializers.ChoiceField(choices=["accepted", "pending_review", "rejected"])
    reason = serializers.CharField(required=False)
    tournaments = serializers.DictField(
        child=serializers.ChoiceField(
            choices=["outside_period", "not_counted", "not_entered", "full", "no_attempts_left", "counted"]
        ),
        required=False,
        help_text="For a match that names tournaments: the result's verdict in each, by tournament id.",
    )


class MatchAnswerSerializer(serializers.Serializer):
    match_id = serializers.UUIDField()
    results = ResultOutcomeSerializer(many=True)


@extend_schema_field(
    {
        "anyOf": [
            {"$ref": "#/components/schemas/ResultOutcome"},
            {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
                "description": "The result's field errors (the match answered 400).",
            },
        ]
    }
)
class _BatchResultAnswerField(serializers.DictField):
    """One result of a batch answer: its outcome, or its field errors when the match is a 400."""


class BatchMatchAnswerSerializer(serializers.Serializer):
    # A refused match carries `detail` and `code` (409), or its field errors by field name (400,
    # with `results` holding each result's own), instead of per-result outcomes.
    match_id = serializers.UUIDField()
    results = serializers.ListField(
        child=_BatchResultAnswerField(), required=False, help_text="Absent when the match was refused with 409."
    )
    http_status = serializers.IntegerField(help_text="202, 200 (replay), 400 or 409 for this match.")
    detail = serializers.CharField(required=False)
    code = serializers.CharField(required=False)


class BatchAnswerSerializer(serializers.Serializer):
    matches = BatchMatchAnswerSerializer(many=True)


class PlayerPatchSerializer(serializers.Serializer):
    """Strict: a display name is a string, hidden a JSON boolean (no "true" or 1)."""

    display_name = serializers.CharField(required=False, max_length=100)
    hidden = serializers.BooleanField(required=False)

    def validate_display_name(self, value: str) -> str:
        if not isinstance(self.initial_data.get("display_name"), str) or not 1 <= len(value.strip()) <= 100:
            raise serializers.ValidationError("A display name is a string of 1-100 characters.")
        return value.strip()

    def validate_hidden(self, value: bool) -> bool:
        if not isinstance(self.initial_data.get("hidden"), bool):
            raise serializers.ValidationError("hidden must be true or false.")
        return value


class PlayerSerializer(serializers.Serializer):
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    hidden = serializers.BooleanField()


class OwnRankSerializer(serializers.Serializer):
    player_id = serializers.CharField()
    score = serializers.IntegerField()
    rank = serializers.IntegerField()
    hidden = serializers.BooleanField()
