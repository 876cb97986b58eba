"""Server keys and signatures, and the judge every submitted result passes through."""

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from leaderboard_site.api_errors import ApiError
from seasons.models import Game

from .models import ServerKey

SIGNATURE_PREFIX = "v1="
HEADER_KEY = "X-Leaderboard-Key"
HEADER_TIMESTAMP = "X-Leaderboard-Timestamp"
HEADER_SIGNATURE = "X-Leaderboard-Signature"


def signature_compute(*, secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    """`v1=` + hex HMAC-SHA256 over "timestamp\\nMETHOD\\npath?query\\nbody" (API.md section 2)."""
    message = b"\n".join([timestamp.encode(), method.upper().encode(), path.encode(), body])
    return SIGNATURE_PREFIX + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def server_key_create(*, game: Game, label: str = "") -> ServerKey:
    return ServerKey.objects.create(
        key_id="lbk_" + secrets.token_hex(8),
        secret=secrets.token_urlsafe(32),
        game=game,
        label=label,
    )


def server_key_revoke(*, key_id: str) -> ServerKey:
    key = ServerKey.objects.get(key_id=key_id)
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def request_verify(
    *, game_slug: str, method: str, path: str, body: bytes, headers: Mapping[str, str], now: datetime
) -> ServerKey:
    """Check a signed request before anything parses its body.

    401 for a missing header, an unknown or revoked key, a bad signature or a timestamp more than
    SIGNATURE_MAX_SKEW_S from our clock (either side); 403 for a valid key of another game.
    """
    key_id = headers.get(HEADER_KEY)
    timestamp = headers.get(HEADER_TIMESTAMP)
    signature = headers.get(HEADER_SIGNATURE)
    if not key_id or not timestamp or not signature:
        raise ApiError(
            401,
            "not_authenticated",
            f"Signed requests need the headers {HEADER_KEY}, {HEADER_TIMESTAMP} and {HEADER_SIGNATURE}.",
        )
    if not timestamp.isdigit() or len(timestamp) > 12:
        raise ApiError(401, "authentication_failed", f"{HEADER_TIMESTAMP} must be Unix time in whole seconds.")
    if abs(int(timestamp) - now.timestamp()) > settings.SIGNATURE_MAX_SKEW_S:
        raise ApiError(
            401,
            "authentication_failed",
            f"{HEADER_TIMESTAMP} is more than {settings.SIGNATURE_MAX_SKEW_S} s from the server's clock.",
        )
    key = ServerKey.objects.select_related("game").filter(key_id=key_id).first()
    if key is None or key.revoked_at is not None:
        raise ApiError(401, "authentication_failed", "Unknown or revoked key.")
    expected = signature_compute(secret=key.secret, timestamp=timestamp, method=method, path=path, body=body)
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        raise ApiError(401, "authentication_failed", "The signature does not match the request.")
    if key.game.slug != game_slug:
        raise ApiError(403, "permission_denied", "This key belongs to another game.")
    return key


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str = ""


ACCEPTED = Verdict("accepted")


def results_judge(*, game: Game, player_ids: list[str], points: list[int], duration_s: int) -> list[Verdict]:
    """The one seam where plausibility rules, rate buckets and bans decide each result's status.

    Every result is accepted for now; anti-cheat (issue 4) plugs its rules in here.
    """
    return [ACCEPTED for _ in player_ids]
