"""An answer's shape, declared once as a DRF serializer and rendered by both HTTP entrances.

The serializer is the declaration: drf-spectacular reads it for the OpenAPI document, and
`shape_of` compiles it into a plain function (object -> dict) that both Django's views and the
fast ASGI entrance call. The compiled function gives what `Serializer(instance).data` gives
(common/tests/test_shapes.py holds the two together on every declared shape), without DRF's
per-call machinery: a read answered in a fraction of a millisecond cannot spend 20-40 us building
a serializer per answer.

Sources name data (keys of a dict, attributes, properties), never methods to call: DRF would call
a method it finds, the compiled function would not.
"""

from collections.abc import Callable, Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty

Render = Callable[[Any], Any]


class _Skip(Exception):
    pass


def shape_of(serializer_class: type[serializers.BaseSerializer[Any]]) -> Render:
    """The function rendering an instance as `serializer_class(instance).data` does."""
    return _compile(serializer_class())


def _compile(field: serializers.Field[Any, Any, Any, Any]) -> Render:
    """A converter for one field's value (its attribute already read, and not None)."""
    kind = type(field)
    if isinstance(field, serializers.ListSerializer):
        assert field.child is not None
        child = _compile(field.child)
        return lambda items: [child(item) for item in items]
    if isinstance(field, serializers.Serializer):
        return _compile_object(field)
    if kind is serializers.IntegerField:
        return int
    if kind is serializers.CharField:
        return str
    if kind is serializers.FloatField:
        return float
    if isinstance(field, serializers.ListField) and kind is serializers.ListField:
        item = _compile(field.child)
        return lambda items: [None if value is None else item(value) for value in items]
    return field.to_representation  # any other field: DRF's own conversion


def _getter(field: serializers.Field[Any, Any, Any, Any]) -> Callable[[Any], Any]:
    attrs = list(field.source_attrs)

    def get(instance: Any) -> Any:
        for attr in attrs:
            if type(instance) is dict or isinstance(instance, Mapping):
                instance = instance[attr]
            else:
                instance = getattr(instance, attr)
        return instance

    return get


def _on_missing(field: serializers.Field[Any, Any, Any, Any]) -> Callable[[Exception], Any]:
    """What DRF does when a field's source is absent: its default, None, or leave the field out."""

    def missing(error: Exception) -> Any:
        if field.default is not empty:
            return field.get_default()
        if field.allow_null:
            return None
        if not field.required:
            raise _Skip from error
        raise error

    return missing


def _compile_object(serializer: serializers.Serializer[Any]) -> Render:
    steps = [
        (str(field.field_name), _getter(field), _compile(field), _on_missing(field))
        for field in serializer._readable_fields
    ]

    def render(instance: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, get, convert, missing in steps:
            try:
                value = get(instance)
            except (KeyError, AttributeError) as error:
                try:
                    value = missing(error)
                except _Skip:
                    continue
            out[name] = None if value is None else convert(value)
        return out

    return render
