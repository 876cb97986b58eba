"""Request signing against the contract's test vector (docs/api.md): the service's helper and
the stdlib copy studios paste from scripts/submit.py give the same signature."""

import importlib.util
from pathlib import Path

from common.signing import HEADER_KEY, HEADER_SIGNATURE, HEADER_TIMESTAMP, signature_compute, signed_headers

VECTOR = {
    "secret": "test-secret-do-not-use",
    "timestamp": "1760386447",
    "method": "POST",
    "path": "/api/v1/games/demo/matches/8f14e45f-ceea-4e1b-9b2a-6f1c2d3e4a5b/results",
    "body": b'{"played_at":"2025-10-13T20:14:07Z","duration_s":540,"results":[{"player_id":"maya","points":50}]}',
}
EXPECTED = "v1=818ad0163063090ce077a47d005773a14ccbf91513a77dd852ca7a5763e9ca94"


def test_the_service_signs_the_contract_vector():
    assert signature_compute(**VECTOR) == EXPECTED


def test_signed_headers_carry_key_timestamp_and_signature():
    headers = signed_headers(
        key_id="lbk_1",
        secret=VECTOR["secret"],
        method="post",
        path=VECTOR["path"],
        body=VECTOR["body"],
        timestamp=int(VECTOR["timestamp"]),
    )
    assert headers == {HEADER_KEY: "lbk_1", HEADER_TIMESTAMP: VECTOR["timestamp"], HEADER_SIGNATURE: EXPECTED}


def test_the_studios_copy_in_scripts_submit_signs_the_same():
    path = Path(__file__).resolve().parents[2] / "scripts" / "submit.py"
    spec = importlib.util.spec_from_file_location("studio_submit", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.sign(VECTOR["secret"], VECTOR["timestamp"], "POST", VECTOR["path"], VECTOR["body"]) == EXPECTED
