"""Response shapes of the public read API: they render the selectors' answers and feed the
OpenAPI schema."""

from datetime import datetime

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from common.formats import iso


@extend_schema_field(OpenApiTypes.STR)
class TimeField(serializers.Field):
    """A time as the API shows every time: ISO 8601 in UTC with a Z, whole seconds."""

    def to_representation(self, value: datetime) -> str:
        return iso(value)


class EntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    score = serializers.IntegerField()
    tier = serializers.CharField(required=False, help_text="Its tier, on a board kind with tiers (else absent).")


class TopSerializer(serializers.Serializer):
    board = serializers.CharField(source="view.board")
    season = serializers.IntegerField(source="view.season.id")
    period = serializers.CharField(source="view.period", allow_null=True)
    region = serializers.CharField(source="view.region")
    tie_rule = serializers.CharField(source="view.game.tie_rule")
    entries = EntrySerializer(many=True)


class PlayerStandingSerializer(serializers.Serializer):
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    score = serializers.IntegerField()
    rank = serializers.IntegerField()
    total = serializers.IntegerField()
    percentile = serializers.FloatField(help_text="Percent of ranked players strictly below, floored to 0.1.")
    percentile_error = serializers.FloatField()
    tier = serializers.CharField(required=False, help_text="Its tier, on a board kind with tiers (else absent).")


class AroundSerializer(serializers.Serializer):
    entries = EntrySerializer(many=True)


class PlayersSerializer(serializers.Serializer):
    entries = EntrySerializer(many=True, help_text="The players found, best rank first.")
    missing = serializers.ListField(
        child=serializers.CharField(), help_text="The ids asked for with no visible score, in the order asked."
    )


class ScoreRankSerializer(serializers.Serializer):
    score = serializers.IntegerField()
    rank = serializers.IntegerField()
    total = serializers.IntegerField()
    percentile = serializers.FloatField(help_text="Percent of ranked players strictly below, floored to 0.1.")
    percentile_error = serializers.FloatField()
    tier = serializers.CharField(required=False, help_text="Its tier, on a board kind with tiers (else absent).")


class PlayerBoardSerializer(serializers.Serializer):
    board = serializers.CharField()
    period = serializers.CharField(allow_null=True)
    rank = serializers.IntegerField()
    score = serializers.IntegerField()
    total = serializers.IntegerField()
    percentile = serializers.FloatField(help_text="Percent of ranked players strictly below, floored to 0.1.")
    tier = serializers.CharField(allow_null=True, help_text="The player's tier on the board; null without tiers.")


class PlayerBoardsSerializer(serializers.Serializer):
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    boards = PlayerBoardSerializer(many=True)


class GameSerializer(serializers.Serializer):
    game = serializers.CharField(source="game.slug")
    name = serializers.CharField(source="game.name")
    tie_rule = serializers.CharField(source="game.tie_rule")
    boards = serializers.ListField(child=serializers.CharField())
    regions = serializers.ListField(child=serializers.CharField())
    current_season = serializers.IntegerField(source="current_id", allow_null=True)


class SeasonSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    starts_at = TimeField()
    ends_at = TimeField()
    grace_s = serializers.IntegerField()
    status = serializers.CharField()


class SeasonsSerializer(serializers.Serializer):
    current = serializers.IntegerField(source="current_id", allow_null=True)
    seasons = SeasonSerializer(many=True)


class FriendEntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField(help_text="Among the player and their friends, by the tie rule.")
    board_rank = serializers.IntegerField(help_text="On the whole board.")
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    score = serializers.IntegerField()
    tier = serializers.CharField(required=False, help_text="Its tier, on a board kind with tiers (else absent).")


class FriendsSerializer(serializers.Serializer):
    entries = FriendEntrySerializer(many=True)


class BucketSerializer(serializers.Serializer):
    min_score = serializers.IntegerField()
    max_score = serializers.IntegerField()
    players = serializers.IntegerField()


class DistributionSerializer(serializers.Serializer):
    buckets = BucketSerializer(many=True)
    total = serializers.IntegerField()


@extend_schema_field(OpenApiTypes.NUMBER)
class NumberField(serializers.Field):
    """A JSON number as given: an integer stays an integer (a percent cutoff may be a decimal)."""

    def to_representation(self, value: int | float) -> int | float:
        return value


class TierSerializer(serializers.Serializer):
    name = serializers.CharField()
    cutoff = NumberField(allow_null=True, help_text="Null on the last tier (it takes everyone else).")


class TiersSerializer(serializers.Serializer):
    by = serializers.CharField(help_text="`score`, `rank` or `percent`.")
    tiers = TierSerializer(many=True, help_text="Best first.")


class TierStandingSerializer(serializers.Serializer):
    name = serializers.CharField()
    cutoff = NumberField(allow_null=True)
    players = serializers.IntegerField(help_text="Ranked players in the tier now.")
    min_score = serializers.IntegerField(allow_null=True, help_text="Null for an empty tier.")
    max_score = serializers.IntegerField(allow_null=True)


class TierStandingsSerializer(serializers.Serializer):
    by = serializers.CharField()
    tiers = TierStandingSerializer(many=True)
