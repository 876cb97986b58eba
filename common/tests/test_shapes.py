"""A shape compiled from a serializer renders what DRF's `.data` renders, field kind by field kind,
including absent sources (default, null, left out) and nested lists."""

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from rest_framework import serializers

from common.shapes import shape_of


class Stamp(serializers.Field):
    def to_representation(self, value):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")


class Entry(serializers.Serializer):
    rank = serializers.IntegerField()
    player_id = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    score = serializers.IntegerField()


class Everything(serializers.Serializer):
    board = serializers.CharField(source="view.board")
    season = serializers.IntegerField(source="view.season.id")
    share = serializers.FloatField()
    hidden = serializers.BooleanField()
    when = Stamp()
    tags = serializers.ListField(child=serializers.CharField())
    entries = Entry(many=True)
    reason = serializers.CharField(required=False)
    note = serializers.CharField(allow_null=True)
    level = serializers.IntegerField(default=3)
    kind = serializers.ChoiceField(choices=["a", "b"])
    match_id = serializers.UUIDField()


@dataclass
class Season:
    id: int


@dataclass
class View:
    board: str
    season: Season


INSTANCES = [
    {
        "view": View("all", Season(7)),
        "share": 12,
        "hidden": 0,
        "when": datetime(2026, 10, 13, 20, 14, 7, tzinfo=UTC),
        "tags": ["x", 1, None],
        "entries": [{"rank": 1, "player_id": "amy", "display_name": None, "score": 30}],
        "kind": "a",
        "match_id": "8f14e45f-ceea-4e1b-9b2a-6f1c2d3e4a5b",
    },
    {
        "view": View("daily", Season(2)),
        "share": 0.5,
        "hidden": True,
        "when": datetime(2027, 1, 1, tzinfo=UTC),
        "tags": [],
        "entries": [],
        "reason": "rate",
        "note": "n",
        "level": None,
        "kind": "b",
        "match_id": "8f14e45f-ceea-4e1b-9b2a-6f1c2d3e4a5b",
    },
]


@pytest.mark.parametrize("instance", INSTANCES)
def test_a_compiled_shape_renders_what_drf_renders(instance):
    assert shape_of(Everything)(instance) == Everything(instance).data


def test_a_required_source_that_is_absent_fails_as_in_drf():
    with pytest.raises(KeyError):
        shape_of(Entry)({"rank": 1, "player_id": "amy", "display_name": None})


class Tiered(serializers.Serializer):
    rank = serializers.IntegerField()
    score = serializers.IntegerField()
    tier = serializers.CharField(required=False)


@dataclass
class TieredRow:
    rank: int
    score: int


@pytest.mark.parametrize(
    "instance",
    [
        {"rank": 1, "score": 5},
        {"rank": 1, "score": 5, "tier": "gold"},
        {"rank": 1, "score": 5, "tier": None},
        TieredRow(1, 5),
    ],
)
def test_a_field_left_out_when_absent_stays_on_the_compiled_path(instance):
    """An optional field (an entry's `tier` on boards with tiers) is left out when absent and
    rendered when present, as DRF does, without falling back to the general renderer."""
    assert shape_of(Tiered)(instance) == Tiered(instance).data
    assert list(shape_of(Tiered)(instance)) == list(Tiered(instance).data)
