"""Shapes of the league API's answers (both entrances render with them; the OpenAPI document
reads them)."""

from typing import Any

from rest_framework import serializers

from boards.serializers import TimeField

from .serializers import PERIOD_STATUSES

LEAGUE_SCORINGS = ["sum", "best"]
# The tournaments' choices (serializers.py), named for the OpenAPI document beside the leagues'.
TOURNAMENT_SCORINGS = ["best", "sum", "latest"]
ZONES = ["promote", "stay", "demote"]
OUTCOMES = ["promoted", "stayed", "demoted"]


class DivisionInSerializer(serializers.Serializer[Any]):
    name = serializers.RegexField(r"^[a-z0-9-]{1,32}$")
    promote = serializers.IntegerField(min_value=0)
    demote = serializers.IntegerField(min_value=0)


class LeagueInSerializer(serializers.Serializer[Any]):
    """The signed PUT's body (for the document; the service validates strictly: league_validation.py)."""

    title = serializers.CharField(max_length=200)
    starts_at = serializers.DateTimeField()
    reset = serializers.CharField(help_text="A 5-field cron expression (UTC): a period starts at each fire.")
    cohort_size = serializers.IntegerField(min_value=2, max_value=1000)
    scoring = serializers.ChoiceField(choices=LEAGUE_SCORINGS, required=False, help_text="Default sum.")
    demote_idle = serializers.BooleanField(required=False)
    divisions = DivisionInSerializer(many=True, help_text="2 to 20, lowest first.")


class DivisionSerializer(DivisionInSerializer):
    players = serializers.IntegerField(help_text="Players in a cohort of this division in the period shown.")
    cohorts = serializers.IntegerField()


class LeaguePeriodSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField()
    starts_at = TimeField()
    ends_at = TimeField()
    status = serializers.ChoiceField(choices=PERIOD_STATUSES)


class LeagueSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    title = serializers.CharField()
    starts_at = TimeField()
    reset = serializers.CharField()
    cohort_size = serializers.IntegerField()
    scoring = serializers.CharField()
    demote_idle = serializers.BooleanField()
    divisions = DivisionSerializer(many=True)
    period = LeaguePeriodSerializer(allow_null=True)


class CohortEntrySerializer(serializers.Serializer[Any]):
    rank = serializers.IntegerField()
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    score = serializers.IntegerField()
    zone = serializers.ChoiceField(choices=ZONES, help_text="Where the period's end moves the player as it stands.")


class CohortSerializer(serializers.Serializer[Any]):
    id = serializers.CharField(help_text="`{period}-{division}-{number}`, e.g. `12-silver-3`.")
    league = serializers.CharField()
    period = LeaguePeriodSerializer()
    division = serializers.CharField()
    final = serializers.BooleanField()
    entries = CohortEntrySerializer(many=True)


class LeaguePlayerSerializer(serializers.Serializer[Any]):
    player_id = serializers.CharField()
    division = serializers.CharField()
    period = LeaguePeriodSerializer(allow_null=True)
    cohort = CohortSerializer(allow_null=True, help_text="null when the player has no result in the period.")


class HistoryPeriodSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField()
    division = serializers.CharField()
    cohort = serializers.CharField()
    rank = serializers.IntegerField()
    score = serializers.IntegerField()
    outcome = serializers.ChoiceField(choices=OUTCOMES)


class LeagueHistorySerializer(serializers.Serializer[Any]):
    periods = HistoryPeriodSerializer(many=True)
