"""Request and response shapes of the submission API, for the OpenAPI schema.

Validation itself is scoring/validation.py (strict types, fast enough for 100,000 results a
request); these serializers document the same contract.
"""

from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField(help_text="Machine code, e.g. invalid, season_closed, idempotency_conflict.")


class ResultInSerializer(serializers.Serializer):
    player_id = serializers.RegexField(r"^[A-Za-z0-9_.:-]{1,64}$")
    points = serializers.IntegerField(min_value=0, help_text="Integer from 0 to the game's max points per match.")
    display_name = serializers.CharField(required=False, max_length=100)
    region = serializers.RegexField(r"^[a-z0-9-]{2,16}$", required=False)


class MatchInSerializer(serializers.Serializer):
    played_at = serializers.DateTimeField(help_text="ISO 8601 UTC; at most 60 s ahead of the server clock.")
    duration_s = serializers.IntegerField(min_value=0)
    season = serializers.IntegerField(required=False, help_text="Default: the season containing played_at.")
    results = ResultInSerializer(many=True, min_length=1, max_length=100)


class BatchMatchInSerializer(MatchInSerializer):
    match_id = serializers.UUIDField()


class BatchInSerializer(serializers.Serializer):
    matches = BatchMatchInSerializer(many=True, min_length=1, max_length=1000)


class ResultOutcomeSerializer(serializers.Serializer):
    player_id = serializers.CharField()
    status = serializers.ChoiceField(choices=["accepted", "pending_review", "rejected"])
    reason = serializers.CharField(required=False)


class MatchAnswerSerializer(serializers.Serializer):
    match_id = serializers.UUIDField()
    results = ResultOutcomeSerializer(many=True)


class BatchMatchAnswerSerializer(MatchAnswerSerializer):
    http_status = serializers.IntegerField(help_text="202, 200 (replay), 400 or 409 for this match.")
    detail = serializers.CharField(required=False)
    code = serializers.CharField(required=False)


class BatchAnswerSerializer(serializers.Serializer):
    matches = BatchMatchAnswerSerializer(many=True)
