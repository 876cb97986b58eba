"""The feed's answer (docs/api.md, "Events out"): it renders `selectors.EventPage` and feeds the
OpenAPI document."""

from typing import Any

from rest_framework import serializers

from .types import EVENT_TYPES


class EventSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(help_text="Increasing within the game: 1, 2, 3, ...; a receiver dedups by it.")
    type = serializers.ChoiceField(choices=list(EVENT_TYPES))
    game = serializers.CharField()
    created_at = serializers.CharField(help_text="When it was published: ISO 8601, UTC, whole seconds.")
    # `data` as the contract names it (Serializer.data is DRF's rendered output: the stubs object).
    data = serializers.DictField(  # type: ignore[assignment]
        help_text="What the event says: its shape is the type's (docs/api.md, Events out)."
    )


class EventPageSerializer(serializers.Serializer[Any]):
    events = EventSerializer(many=True)
    next = serializers.IntegerField(help_text="The last id listed (`after` itself when none is): the next `after`.")
