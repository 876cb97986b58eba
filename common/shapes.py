"""An answer's shape, declared once as a DRF serializer and rendered by both HTTP entrances.

The serializer is the declaration: drf-spectacular reads it for the OpenAPI document, and
`shape_of` compiles it into a plain function (object -> dict; generated code, one dict display per
serializer) that both Django's views and the fast ASGI entrance call. The compiled function gives
what `Serializer(instance).data` gives (common/tests/test_shapes.py and
leaderboard_site/tests/test_operations.py hold the two together), without DRF's per-call machinery:
a read answered in a fraction of a millisecond cannot spend tens of microseconds building
serializers for its entries.

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
    """The serializer's fields in one generated function (a dict display of the converted values),
    with the general renderer below for what it does not cover: a source missing from the instance
    (DRF's default, null or left out), and sources of more than one step (`view.board`)."""
    fields = list(serializer._readable_fields)
    general = _compile_general(fields)
    attrs = [list(field.source_attrs) for field in fields]
    if not fields or any(len(a) != 1 or not a[0].isidentifier() for a in attrs):
        return general
    namespace: dict[str, Any] = {"general": general, "MISSING": _MISSING}
    from_dict, from_object, values, optional = [], [], [], []
    for i, (field, [attr]) in enumerate(zip(fields, attrs, strict=True)):
        namespace[f"c{i}"] = _compile(field)
        name = str(field.field_name)
        if _left_out_when_missing(field):  # e.g. an entry's `tier`, only on boards with tiers
            optional.append((i, attr, name))
            continue
        from_dict.append(f"v{i} = o[{attr!r}]")
        from_object.append(f"v{i} = o.{attr}")
        values.append(f"{name!r}: None if v{i} is None else c{i}(v{i})")

    def left_out_unless_present(get: str) -> list[str]:
        lines = []
        for i, attr, name in optional:
            lines.append(f"v{i} = {get.format(attr=repr(attr))}")
            lines.append(f"if v{i} is not MISSING: d[{name!r}] = None if v{i} is None else c{i}(v{i})")
        return lines

    def indented(lines: list[str], depth: int) -> list[str]:
        return [" " * (4 * depth) + line for line in lines or ["pass"]]

    code = "\n".join(
        [
            "def render(o):",
            "    if type(o) is dict:",
            "        try:",
            *indented(from_dict, 3),
            "        except KeyError:",
            "            return general(o)",
            "        d = {" + ", ".join(values) + "}",
            *indented(left_out_unless_present("o.get({attr}, MISSING)"), 2),
            "        return d",
            "    try:",
            *indented(from_object, 2),
            "    except AttributeError:",
            "        return general(o)",
            "    d = {" + ", ".join(values) + "}",
            *indented(left_out_unless_present("getattr(o, {attr}, MISSING)"), 1),
            "    return d",
        ]
    )
    exec(code, namespace)  # the fields' names and sources are the serializer's, not request data
    render: Render = namespace["render"]
    return render


_MISSING = object()


def _left_out_when_missing(field: serializers.Field[Any, Any, Any, Any]) -> bool:
    """A field DRF leaves out of the answer when its source is absent (not required, no default,
    not nullable)."""
    return not field.required and field.default is empty and not field.allow_null


def _compile_general(fields: list[serializers.Field[Any, Any, Any, Any]]) -> Render:
    steps = [(str(field.field_name), _getter(field), _compile(field), _on_missing(field)) for field in fields]

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
