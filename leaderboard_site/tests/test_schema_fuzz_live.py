"""Hostile input, fuzzed against a running service (issue 11): schemathesis reads `/api/schema/` from
a real web process (uvicorn, the production ASGI stack) and generates requests for every
operation. Every request is signed with a test key, as a match server signs it (the signature
covers the exact body bytes sent), so the signed operations get past the signature to their
validation and their ledger writes; each answer must be no server error and must match the schema
(status code, content type, headers, body); reads must also not refuse a schema-valid request.
Each write is sent again unsigned and with a wrong
signature: neither may get a 2xx.
"""

import json
import urllib.parse
from datetime import timedelta

import pytest
import requests
import schemathesis
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.core import NotSet
from schemathesis.specs.openapi.checks import positive_data_acceptance

from anticheat.testing import make_key
from boards.testing import ids_repeated, period_misfits, record
from common.signing import signed_headers
from common.testing import free_port, start_web, stop
from leaderboard_site.tests.test_operations import OPERATIONS as EVERY_OPERATION
from seasons.testing import make_game

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

WRITES = {"POST", "PUT", "PATCH", "DELETE"}
OWN_RANK = "GET /api/v1/games/{game}/players/{player_id}/rank"  # signed too: a hidden player's own rank
FEED = "GET /api/v1/games/{game}/events"  # signed too: the events feed
SIGNED_READS = {OWN_RANK, FEED}
EXAMPLES = 12  # per operation, 40 for a board read (5 board kinds in one): about 1,000 requests in all


def test_every_operation_of_the_served_schema_fuzzed_with_signed_requests():
    game = make_game("arena", start=timezone.now() - timedelta(days=1))
    key = make_key(game)
    for i in range(30):
        record(game, f"p{i:02d}", 10 * i, region="eu", played_at=timezone.now())
    port = free_port()
    # One key sends everything: its request bucket raised through its setting, as for a busy server.
    web = start_web(port, KEY_RATE_PER_S="100000", KEY_RATE_BURST="100000", READ_RATE_PER_S="100000")
    base = f"http://127.0.0.1:{port}"
    session = requests.Session()
    seen: dict[str, set[int]] = {}
    try:
        schema = schemathesis.openapi.from_url(f"{base}/api/schema/")
        operations = [result.ok() for result in schema.get_all_operations()]
        declared = len(EVERY_OPERATION)
        assert len(operations) == declared  # every declared one

        for operation in operations:
            label = f"{operation.method.upper()} {operation.path}"
            seen[label] = set()
            _fuzz(operation, label, base=base, session=session, key=key, seen=seen[label])
    finally:
        stop(web)
    # Every signed operation got past the signature at least once (not all refused as unsigned).
    signed_ops = {label: codes for label, codes in seen.items() if label.split()[0] in WRITES or label in SIGNED_READS}
    declared = [op for op in EVERY_OPERATION if op.headers]
    assert len(signed_ops) == len(declared) and all(codes - {401} for codes in signed_ops.values()), signed_ops
    print({label: sorted(codes) for label, codes in seen.items()})


def _fuzz(operation, label: str, *, base: str, session: requests.Session, key, seen: set[int]) -> None:
    """EXAMPLES generated requests of one operation, each signed, checked against the schema."""

    examples = 40 if "{board}" in operation.path else EXAMPLES

    @hypothesis_settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=operation.as_strategy(path_parameters={"game": "arena"}))
    def check(case) -> None:
        method = case.method.upper()
        path = "/".join(urllib.parse.quote(part, safe="") for part in case.formatted_path.split("/"))
        body = b"" if isinstance(case.body, NotSet) or case.body is None else json.dumps(case.body).encode()
        headers = {"Content-Type": "application/json"} if body else {}
        query = urllib.parse.urlencode(case.query or {}, doseq=True)
        target = f"{path}?{query}" if query else path  # the signature covers the query too
        signed = signed_headers(key_id=key.key_id, secret=key.secret, method=method, path=target, body=body)
        response = session.request(method, base + target, data=body, headers={**headers, **signed})
        seen.add(response.status_code)
        assert response.status_code < 500, (label, case.query, body[:300], response.text[:300])
        # Status, content type, headers and body as documented. A write may answer a
        # schema-valid body 400: its bounds depend on the server's state (played_at at most
        # 60 s ahead of its clock, the game's max points), which no schema can say.
        # A period's format depends on the board (the path's, or the own rank's `board` parameter),
        # and `ids` must not repeat one.
        board = (case.path_parameters or {}).get("board") or (case.query or {}).get("board") or "all"
        misfit = period_misfits(board, (case.query or {}).get("period"))
        misfit = misfit or ids_repeated((case.query or {}).get("ids"))  # `maya,maya`: no schema says "distinct"
        excluded = [positive_data_acceptance] if method in WRITES or misfit else []
        case.validate_response(response, excluded_checks=excluded)
        if method in WRITES:
            wrong = signed_headers(key_id=key.key_id, secret="x" * 40, method=method, path=target, body=body)
            for attempt in ({}, wrong):
                refused = session.request(method, base + target, data=body, headers={**headers, **attempt})
                assert not 200 <= refused.status_code < 300, (label, attempt, refused.text[:300])
                assert refused.status_code < 500, (label, refused.text[:300])

    check()
