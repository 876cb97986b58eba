"""One declaration per HTTP operation, read by every entrance.

An `Operation` says everything about one endpoint of the API: its method and route, its path and
query parameters with their bounds, the selector or service it calls, the shape of its answer and
the errors it can give. From the declarations:

- `urlpatterns` builds Django's views (one DRF view per path, a method per operation);
- drf-spectacular builds the OpenAPI document from the same views (`Operation.schema`);
- `Router` gives the fast ASGI entrances (boards/fastpath.py, scoring/fastpath.py) the operation
  a request path names, with its path arguments, and `Query.read` parses its query as Django does;
- `Operation.render` (the answer's serializer compiled by common/shapes.py) renders the answer
  in both entrances.

So a new field, bound or read is written once and every entrance serves it. Each app declares its
own operations (boards/apis.py: the public reads; scoring/apis.py: the signed writes) and lists
them in its urls.py.

`FAST_ANSWERS` counts, per operation, the answers a fast entrance gave itself: tests read it to
prove which entrance answered.
"""

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpResponseBase
from django.urls import URLPattern, path
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .api_errors import ErrorSerializer, Problem
from .shapes import Render, shape_of

API_PREFIX = "/api/v1/"
Args = dict[str, Any]  # an operation's path arguments and parsed query parameters, by name
Serializer = type[serializers.BaseSerializer[Any]]

FAST_ANSWERS: Counter[str] = Counter()  # operation id -> answers given by a fast entrance (tests)

INVALID = Problem(400, "invalid", "a parameter or the body is malformed or out of range")


def digits_only(text: str) -> bool:
    """Whether `text` is a non-negative integer that int() reads: ASCII digits only (str.isdigit()
    also takes "²" and "١٢", which int() refuses: a 500 where a 400 belongs)."""
    return text.isascii() and text.isdigit()


@dataclass(frozen=True)
class Query:
    """A query parameter: its JSON Schema (the document's) and how a raw value is read. With
    `bounds`, an integer in [low, high] (else 400 `invalid`); with `parse`, what it makes of the
    text (it raises INVALID itself); with neither, the raw text (the selector checks it). Absent:
    `default`, or 400 `invalid` when `required`."""

    name: str
    description: str
    schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "string"})
    bounds: tuple[int, int] | None = None
    default: Any = None
    required: bool = False
    parse: Callable[[str], Any] | None = None
    example: Any = None  # a value a request may send (the document shows it; tests send it)

    def read(self, raw: str | None) -> Any:
        if raw is None:
            if self.required:
                raise INVALID(f"{self.name} is required.")
            return self.default
        if self.parse is not None:
            return self.parse(raw)
        if self.bounds is None:
            return raw
        low, high = self.bounds
        if not digits_only(raw) or not low <= int(raw) <= high:
            raise INVALID(f"{self.name} must be an integer from {low} to {high}.")
        return int(raw)

    def openapi(self) -> OpenApiParameter:
        examples = [OpenApiExample("example", value=self.example)] if self.example is not None else []
        return OpenApiParameter(
            self.name,
            dict(self.schema),
            OpenApiParameter.QUERY,
            required=self.required,
            description=self.description,
            examples=examples,
        )


def integer(name: str, *, low: int, high: int, default: int, description: str) -> Query:
    schema = {"type": "integer", "minimum": low, "maximum": high, "default": default}
    return Query(name, description, schema, bounds=(low, high), default=default)


def required_integer(name: str, *, low: int, high: int, example: int, description: str) -> Query:
    """An integer parameter in [low, high] that a request must give (else 400 `invalid`)."""
    schema = {"type": "integer", "minimum": low, "maximum": high}
    return Query(name, description, schema, bounds=(low, high), required=True, example=example)


def path_param(name: str, schema: Mapping[str, Any], description: str) -> OpenApiParameter:
    return OpenApiParameter(name, dict(schema), OpenApiParameter.PATH, required=True, description=description)


_PATH_NAME = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class Operation:
    """One endpoint: everything both entrances and the OpenAPI document need to know about it.

    `call(request, args)` is the selector or service call behind it: it returns the object the
    answer's serializer renders (`answer`), a Response of its own (a write that chooses its status
    and headers), or None for an answer without a body; it raises `ApiError` (one of `errors`).
    `fast` is what a fast entrance needs to answer it without Django (None: Django only)."""

    id: str  # the OpenAPI operationId
    method: str
    path: str  # under /api/v1/, `{name}` for each path parameter
    route: str  # the URL pattern's name (request metrics label it so)
    call: Callable[[Request, Args], Any]
    description: str
    path_params: tuple[OpenApiParameter, ...]
    query: tuple[Query, ...] = ()
    headers: tuple[OpenApiParameter, ...] = ()
    request: Serializer | None = None
    answer: Serializer | None = None
    status: int = 200
    also: Mapping[int, Serializer] = field(default_factory=dict)  # other success answers (a replay's 200)
    errors: tuple[Problem, ...] = ()
    answer_headers: tuple[OpenApiParameter, ...] = ()  # headers of its answers (OpenApiParameter(response=...))
    fast: Any = None
    render: Render = field(init=False, repr=False, compare=False)
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = _PATH_NAME.findall(self.path)
        if names != [p.name for p in self.path_params]:
            raise ValueError(f"{self.id}: path parameters {names} are declared as {[p.name for p in self.path_params]}")
        object.__setattr__(self, "render", shape_of(self.answer) if self.answer is not None else _no_body)
        regex = "^" + re.escape(API_PREFIX) + _PATH_NAME.sub(r"(?P<\1>[^/]+)", self.path) + "$"
        object.__setattr__(self, "pattern", re.compile(regex))

    def arguments(self, path_args: Mapping[str, str], query: Mapping[str, str]) -> Args:
        """The path arguments and each declared query parameter, read (400 `invalid` when out of bounds)."""
        args: Args = dict(path_args)
        for param in self.query:
            args[param.name] = param.read(query.get(param.name))
        return args

    def respond(self, result: Any) -> HttpResponseBase:
        """Django's answer for what `call` returned."""
        if isinstance(result, HttpResponseBase):
            return result
        if self.answer is None:
            return Response(status=self.status)
        return Response(self.render(result), status=self.status)

    def schema(self) -> dict[str, Any]:
        """drf-spectacular's `extend_schema` arguments for this operation."""
        responses: dict[int, Any] = {self.status: self.answer, **self.also}
        for status in sorted({problem.status for problem in self.errors}):
            meanings = "; ".join(f"`{p.code}`: {p.meaning}" for p in self.errors if p.status == status)
            responses[status] = OpenApiResponse(ErrorSerializer, description=meanings)
        waits = sorted({problem.status for problem in self.errors if problem.status in (429, 503)})
        retry_after = [retry_after_header(waits)] if waits else []
        return {
            "operation_id": self.id,
            "parameters": [
                *self.path_params,
                *(q.openapi() for q in self.query),
                *self.headers,
                *self.answer_headers,
                *retry_after,
            ],
            "request": self.request,
            "responses": responses,
            "description": self.description,
        }


def retry_after_header(statuses: list[int]) -> OpenApiParameter:
    return OpenApiParameter(
        "Retry-After",
        {"type": "integer", "minimum": 1},
        OpenApiParameter.HEADER,
        description="Whole seconds to wait before trying again.",
        response=statuses,
    )


def _no_body(result: Any) -> None:
    return None


class Router:
    """The operations a fast entrance serves (those of `operations` that `serves` accepts), found
    by method and path as Django's URL resolution finds them."""

    def __init__(self, operations: Iterable[Operation], serves: Callable[[Operation], bool]) -> None:
        every = list(operations)
        self.operations = [op for op in every if serves(op)]
        self._allow = {op.id: allow_header(op, every) for op in self.operations}
        # The candidates of a request: the operations of its method with as many path segments.
        self._by_shape: dict[tuple[str, int], list[Operation]] = {}
        for op in self.operations:
            shape = (op.method, (API_PREFIX + op.path).count("/"))
            self._by_shape.setdefault(shape, []).append(op)

    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        for op in self._by_shape.get((method, path.count("/")), ()):
            found = op.pattern.match(path)
            if found is not None:
                return op, found.groupdict()
        return None

    def allow(self, op: Operation) -> bytes:
        """The `Allow` header Django's view of the operation's path answers with."""
        return self._allow[op.id]


def allow_header(op: Operation, operations: Iterable[Operation]) -> bytes:
    """DRF's `Allow` for a view of these methods: Django's method order, HEAD with GET, OPTIONS."""
    methods = {other.method.lower() for other in operations if other.path == op.path}
    if "get" in methods:
        methods.add("head")
    methods.add("options")
    return ", ".join(m.upper() for m in APIView.http_method_names if m in methods).encode()


def urlpatterns(operations: Iterable[Operation]) -> list[URLPattern]:
    """Django's URL patterns (under api/v1/) for these operations: one view per path."""
    by_path: dict[str, list[Operation]] = {}
    for op in operations:
        by_path.setdefault(op.path, []).append(op)
    patterns = []
    for template, ops in by_path.items():
        if len({op.route for op in ops}) != 1:
            raise ValueError(f"{template}: one route name per path, not {[op.route for op in ops]}")
        route = _PATH_NAME.sub(r"<str:\1>", template)
        patterns.append(path(route, _view(ops).as_view(), name=ops[0].route))
    return patterns


def _view(ops: list[Operation]) -> type[APIView]:
    attrs: dict[str, Any] = {
        "authentication_classes": [],
        "permission_classes": [],
        "__doc__": " ".join(op.id for op in ops),
        "__module__": __name__,
    }
    for op in ops:
        attrs[op.method.lower()] = _handler(op)
    name = "".join(part.title() for part in re.split(r"[-_]", ops[0].route)) + "Api"
    return type(name, (APIView,), attrs)


def _handler(op: Operation) -> Callable[..., HttpResponseBase]:
    def handle(self: APIView, request: Request, **path_args: str) -> HttpResponseBase:
        return op.respond(op.call(request, op.arguments(path_args, request.query_params)))

    handle.__name__ = op.method.lower()
    handle.__qualname__ = f"{op.id}.{handle.__name__}"
    decorated: Callable[..., HttpResponseBase] = extend_schema(**op.schema())(handle)
    return decorated
