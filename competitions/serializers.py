"""Shapes of the tournament API's answers (both entrances render with them; the OpenAPI document
reads them)."""

from typing import Any

from rest_framework import serializers

from boards.serializers import TimeField

PERIOD_STATUSES = ["upcoming", "active", "grace", "final"]


class RewardBandSerializer(serializers.Serializer[Any]):
    rank_from = serializers.IntegerField()
    rank_to = serializers.IntegerField()
    reward = serializers.JSONField()


class PeriodSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField()
    starts_at = TimeField()
    ends_at = TimeField()
    status = serializers.ChoiceField(choices=PERIOD_STATUSES)
    entrants = serializers.IntegerField()


class TournamentInSerializer(serializers.Serializer[Any]):
    """The signed PUT's body (for the document; the service validates strictly: validation.py)."""

    title = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True)
    category = serializers.IntegerField(min_value=0, max_value=127, required=False)
    metadata = serializers.JSONField(required=False, help_text="A JSON object of at most 4 KB.")
    scoring = serializers.ChoiceField(choices=["best", "sum", "latest"], required=False)
    order = serializers.ChoiceField(choices=["desc", "asc"], required=False)
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField(required=False, allow_null=True)
    duration_s = serializers.IntegerField(min_value=60, max_value=31_536_000)
    reset = serializers.CharField(required=False, allow_null=True, help_text="A 5-field cron expression (UTC).")
    grace_s = serializers.IntegerField(min_value=0, required=False, help_text="Default 60.")
    max_entrants = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    max_attempts = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    join_required = serializers.BooleanField(required=False)
    rewards = RewardBandSerializer(many=True, required=False)


class TournamentSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    category = serializers.IntegerField()
    metadata = serializers.JSONField()
    scoring = serializers.CharField()
    order = serializers.CharField()
    starts_at = TimeField()
    ends_at = TimeField(allow_null=True)
    duration_s = serializers.IntegerField()
    reset = serializers.CharField(allow_null=True)
    grace_s = serializers.IntegerField()
    max_entrants = serializers.IntegerField(allow_null=True)
    max_attempts = serializers.IntegerField(allow_null=True)
    join_required = serializers.BooleanField()
    rewards = RewardBandSerializer(many=True)
    period = PeriodSerializer(allow_null=True)
    next_period_starts_at = TimeField(allow_null=True)
    can_enter = serializers.BooleanField()


class TournamentsSerializer(serializers.Serializer[Any]):
    tournaments = TournamentSerializer(many=True)


class PeriodsSerializer(serializers.Serializer[Any]):
    periods = PeriodSerializer(many=True)


class EntrantSerializer(serializers.Serializer[Any]):
    tournament = serializers.CharField()
    player_id = serializers.CharField()
    period = PeriodSerializer()


class StandingPeriodSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField()
    starts_at = TimeField()
    ends_at = TimeField()
    status = serializers.ChoiceField(choices=PERIOD_STATUSES)


class StandingEntrySerializer(serializers.Serializer[Any]):
    rank = serializers.IntegerField()
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    score = serializers.IntegerField()
    attempts = serializers.IntegerField(help_text="The player's counted results in the period.")
    reward = serializers.JSONField(allow_null=True, help_text="The reward band's reward; null outside the bands.")


class StandingTopSerializer(serializers.Serializer[Any]):
    tournament = serializers.CharField()
    period = StandingPeriodSerializer()
    final = serializers.BooleanField()
    entries = StandingEntrySerializer(many=True)


class StandingPlayerSerializer(serializers.Serializer[Any]):
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    score = serializers.IntegerField(allow_null=True, help_text="null for an entrant with no counted result.")
    rank = serializers.IntegerField(allow_null=True)
    total = serializers.IntegerField()
    attempts = serializers.IntegerField()
    max_attempts = serializers.IntegerField(allow_null=True)
    reward = serializers.JSONField(allow_null=True)


class StandingAroundSerializer(serializers.Serializer[Any]):
    entries = StandingEntrySerializer(many=True)
