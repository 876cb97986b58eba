"""Request signing (docs/api.md), shared by the service's check, the demo stream, the
benchmarks and the tests. Standard library only, so a benchmark can import it without Django.
`scripts/submit.py` keeps a copy for studios to paste; a test holds both to the contract's vector.
"""

import hashlib
import hmac
import time

SIGNATURE_PREFIX = "v1="
HEADER_KEY = "X-Leaderboard-Key"
HEADER_TIMESTAMP = "X-Leaderboard-Timestamp"
HEADER_SIGNATURE = "X-Leaderboard-Signature"


def signature_compute(*, secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    """`v1=` + hex HMAC-SHA256 over "timestamp\\nMETHOD\\npath?query\\nbody"."""
    message = b"\n".join([timestamp.encode(), method.upper().encode(), path.encode(), body])
    return SIGNATURE_PREFIX + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signed_headers(
    *, key_id: str, secret: str, method: str, path: str, body: bytes, timestamp: int | None = None
) -> dict[str, str]:
    """The three signature headers a match server sends with a request."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {
        HEADER_KEY: key_id,
        HEADER_TIMESTAMP: ts,
        HEADER_SIGNATURE: signature_compute(secret=secret, timestamp=ts, method=method, path=path, body=body),
    }
