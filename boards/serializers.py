"""Response shapes of the public read API (documentation for the OpenAPI schema)."""

from rest_framework import serializers


class EntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    score = serializers.IntegerField()


class TopSerializer(serializers.Serializer):
    board = serializers.CharField()
    season = serializers.IntegerField()
    period = serializers.CharField(allow_null=True)
    region = serializers.CharField()
    tie_rule = serializers.CharField()
    entries = EntrySerializer(many=True)


class PlayerStandingSerializer(serializers.Serializer):
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    score = serializers.IntegerField()
    rank = serializers.IntegerField()
    total = serializers.IntegerField()
    percentile = serializers.FloatField(help_text="Percent of ranked players strictly below, floored to 0.1.")
    percentile_error = serializers.FloatField()


class AroundSerializer(serializers.Serializer):
    entries = EntrySerializer(many=True)


class GameSerializer(serializers.Serializer):
    game = serializers.CharField()
    name = serializers.CharField()
    tie_rule = serializers.CharField()
    boards = serializers.ListField(child=serializers.CharField())
    regions = serializers.ListField(child=serializers.CharField())
    current_season = serializers.IntegerField(allow_null=True)


class SeasonSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    starts_at = serializers.CharField()
    ends_at = serializers.CharField()
    grace_s = serializers.IntegerField()
    status = serializers.CharField()


class SeasonsSerializer(serializers.Serializer):
    current = serializers.IntegerField(allow_null=True)
    seasons = SeasonSerializer(many=True)


class FriendEntrySerializer(EntrySerializer):
    board_rank = serializers.IntegerField()


class FriendsSerializer(serializers.Serializer):
    entries = FriendEntrySerializer(many=True)


class PlayerPatchSerializer(serializers.Serializer):
    display_name = serializers.CharField(required=False, max_length=100)
    hidden = serializers.BooleanField(required=False)


class PlayerSerializer(serializers.Serializer):
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    hidden = serializers.BooleanField()


class OwnRankSerializer(serializers.Serializer):
    player_id = serializers.CharField()
    score = serializers.IntegerField()
    rank = serializers.IntegerField()
    hidden = serializers.BooleanField()


class BucketSerializer(serializers.Serializer):
    min_score = serializers.IntegerField()
    max_score = serializers.IntegerField()
    players = serializers.IntegerField()


class DistributionSerializer(serializers.Serializer):
    buckets = BucketSerializer(many=True)
    total = serializers.IntegerField()
