"""Request ids: which incoming ids are taken, how they reach log records (JSON and text) and a
task's message headers, and how a worker binds them again."""

import io
import json
import logging
import re
from types import SimpleNamespace

from common import logs
from common.request_ids import (
    MAX_PER_TASK,
    RequestIdFilter,
    bind,
    request_id,
    request_id_accept,
    request_ids,
    request_ids_bound,
    task_headers_add,
    task_ids_bind,
    task_ids_unbind,
    unbind,
)


def test_a_sane_incoming_id_is_kept_anything_else_replaced_by_a_new_one():
    assert request_id_accept(b"abc-123_x.y:z") == "abc-123_x.y:z"
    assert request_id_accept(b"a" * 64) == "a" * 64
    for bad in (None, b"", b"a" * 65, b"has space", b"semi;colon", b'quote"', b"\xc3\xa9", b"new\nline"):
        made = request_id_accept(bad)
        assert re.fullmatch(r"[0-9a-f]{32}", made), bad
    assert request_id_accept(None) != request_id_accept(None)


def record_through(formatter: logging.Formatter, message: str, **extra) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("test.request_ids")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        logger.info(message, extra=extra)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def test_json_lines_parse_and_carry_the_request_id_when_there_is_one():
    token = bind("req-1")
    try:
        line = record_through(logs.json_formatter(), "write arena: 1 matches", game="arena", results_accepted=2)
    finally:
        unbind(token)
    document = json.loads(line)
    assert document["message"] == "write arena: 1 matches"
    assert document["request_id"] == "req-1"
    assert (document["level"], document["logger"], document["game"], document["results_accepted"]) == (
        "INFO",
        "test.request_ids",
        "arena",
        2,
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00", document["time"])
    outside = json.loads(record_through(logs.json_formatter(), "no request here"))
    assert "request_id" not in outside and "request_ids" not in outside


def test_several_ids_are_a_list_and_the_text_format_names_them_too():
    with request_ids_bound(["a", "b", "a"]):
        document = json.loads(record_through(logs.json_formatter(), "apply task"))
        text = record_through(logs.TextFormatter(), "apply task")
    assert document["request_ids"] == ["a", "b"] and "request_id" not in document
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d\.\d{3} INFO +\S+ +test\.request_ids  apply task  request_ids=a,b", text.rstrip()
    )
    with request_ids_bound(["only"]):
        assert record_through(logs.TextFormatter(), "x").rstrip().endswith(" x  request_id=only")


def test_a_task_published_in_a_request_carries_its_ids_and_the_worker_binds_them():
    headers: dict = {}
    task_headers_add(headers=headers)
    assert headers == {}  # nothing bound: no header
    with request_ids_bound(f"r{i}" for i in range(MAX_PER_TASK + 50)):
        task_headers_add(headers=headers)
    assert headers["request_ids"] == [f"r{i}" for i in range(MAX_PER_TASK)]  # capped

    task = SimpleNamespace(request=SimpleNamespace(request_ids=headers["request_ids"]))
    task_ids_bind(task=task)
    assert request_ids() == tuple(headers["request_ids"])
    task_ids_unbind(task=task)
    assert request_ids() == ()
    # A message from a release before request ids, or with junk in the header: nothing bound.
    for request in (
        SimpleNamespace(),
        SimpleNamespace(request_ids="abc"),
        SimpleNamespace(request_ids=["ok", "no way"]),
    ):
        task_ids_bind(task=SimpleNamespace(request=request))
        assert request_ids() in {(), ("ok",)}
        task_ids_unbind()
    assert request_id() is None
