"""Server keys and signatures, and the judge every submitted result passes through."""

import hashlib
import hmac
import logging
import math
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

import redis
from django.conf import settings
from django.utils import timezone

from leaderboard_site.api_errors import ApiError
from scoring import redis_boards
from seasons.models import Game

from .models import Ban, GameRules, ServerKey

logger = logging.getLogger(__name__)

SIGNATURE_PREFIX = "v1="
HEADER_KEY = "X-Leaderboard-Key"
HEADER_TIMESTAMP = "X-Leaderboard-Timestamp"
HEADER_SIGNATURE = "X-Leaderboard-Signature"


def signature_compute(*, secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    """`v1=` + hex HMAC-SHA256 over "timestamp\\nMETHOD\\npath?query\\nbody" (API.md section 2)."""
    message = b"\n".join([timestamp.encode(), method.upper().encode(), path.encode(), body])
    return SIGNATURE_PREFIX + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signed_headers(
    *, key_id: str, secret: str, method: str, path: str, body: bytes, timestamp: int | None = None
) -> dict[str, str]:
    """The three signature headers for a request (what a match server sends; used by the demo
    stream and the tests)."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {
        HEADER_KEY: key_id,
        HEADER_TIMESTAMP: ts,
        HEADER_SIGNATURE: signature_compute(secret=secret, timestamp=ts, method=method, path=path, body=body),
    }


def server_key_create(*, game: Game, label: str = "") -> ServerKey:
    return ServerKey.objects.create(
        key_id="lbk_" + secrets.token_hex(8),
        secret=secrets.token_urlsafe(32),
        game=game,
        label=label,
    )


def server_key_rotate(*, key_id: str, overlap_s: int, now: datetime) -> ServerKey:
    """A new key for the same game; the old one keeps working for `overlap_s`, then retires."""
    old = ServerKey.objects.select_related("game").get(key_id=key_id, revoked_at__isnull=True)
    new = server_key_create(game=old.game, label=f"rotated from {old.key_id}")
    old.expires_at = now + timedelta(seconds=overlap_s)
    old.save(update_fields=["expires_at"])
    return new


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
    # Whole seconds on both sides: the header has whole seconds, so the server's clock is read the
    # same way (a request signed 300 s ago, to the second, is still in the window).
    if abs(int(timestamp) - int(now.timestamp())) > settings.SIGNATURE_MAX_SKEW_S:
        raise ApiError(
            401,
            "authentication_failed",
            f"{HEADER_TIMESTAMP} is more than {settings.SIGNATURE_MAX_SKEW_S} s from the server's clock.",
        )
    key = ServerKey.objects.select_related("game").filter(key_id=key_id).first()
    if key is None or key.revoked_at is not None or (key.expires_at is not None and key.expires_at <= now):
        raise ApiError(401, "authentication_failed", "Unknown, revoked or retired key.")
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
RATE = Verdict("pending_review", "rate")
BANNED = Verdict("rejected", "banned")
IMPLAUSIBLE = Verdict("rejected", "implausible")
POINTS_PER_MINUTE = Verdict("pending_review", "points_per_minute")
MATCHES_PER_HOUR = Verdict("pending_review", "matches_per_hour")

_BUCKET = redis_boards.lua_path(__file__, "token_bucket.lua")


@dataclass(frozen=True)
class Rules:
    player_burst: int
    player_refill_s: int
    key_rate_per_s: int
    key_burst: int
    max_points_per_minute: int = 0
    min_duration_s: int = 0
    max_matches_per_hour: int = 0


def rules_for(*, game: Game) -> Rules:
    """The game's limits: its GameRules where set, else the environment's defaults."""
    row = GameRules.objects.filter(game=game).first()

    def pick(name: str, default: int) -> int:
        value = getattr(row, name, None) if row is not None else None
        return int(default if value is None else value)

    return Rules(
        player_burst=pick("player_burst", settings.PLAYER_BUCKET_BURST),
        player_refill_s=pick("player_refill_s", settings.PLAYER_BUCKET_REFILL_S),
        key_rate_per_s=pick("key_rate_per_s", settings.KEY_RATE_PER_S),
        key_burst=pick("key_burst", settings.KEY_RATE_BURST),
        max_points_per_minute=pick("max_points_per_minute", settings.MAX_POINTS_PER_MINUTE),
        min_duration_s=pick("min_duration_s", settings.MIN_MATCH_DURATION_S),
        max_matches_per_hour=pick("max_matches_per_hour", settings.MAX_MATCHES_PER_HOUR),
    )


def _spend(
    keys: list[str], wants: list[int], *, capacity: int, ms_per_token: float, now: datetime
) -> list[tuple[int, int]]:
    script = redis_boards.lua_script(_BUCKET)
    ttl_s = int(capacity * ms_per_token / 1000) + 60
    reply = script(
        keys=keys,
        args=[int(now.timestamp() * 1000), capacity, ms_per_token, ttl_s, *wants],
        client=redis_boards.client(),
    )
    return [(int(reply[i]), int(reply[i + 1])) for i in range(0, len(reply), 2)]


def server_key_throttle(*, key: ServerKey, rules: Rules, now: datetime) -> int | None:
    """Spend one token of the key's request bucket: None if allowed, else Retry-After seconds.

    Fails open when Redis is down (the ledger, not the limiter, decides what is stored).
    """
    if rules.key_rate_per_s == 0:
        return None
    try:
        [(granted, wait_ms)] = _spend(
            [redis_boards.server_key_bucket_key(key.key_id)],
            [1],
            capacity=max(rules.key_burst, 1),
            ms_per_token=1000 / rules.key_rate_per_s,
            now=now,
        )
    except redis.RedisError as exc:
        logger.warning("key rate limit skipped, Redis unavailable: %s", exc)
        return None
    return None if granted else max(1, math.ceil(wait_ms / 1000))


def reader_throttle(*, address: str, now: datetime) -> int | None:
    """Public reads: one token of the client address's bucket; None if allowed, else Retry-After.
    Generous by default (READ_RATE_PER_S); 0 switches it off. Fails open when Redis is down."""
    rate = int(settings.READ_RATE_PER_S)
    if rate == 0 or not address:
        return None
    try:
        [(granted, wait_ms)] = _spend(
            [redis_boards.reader_bucket_key(address)],
            [1],
            capacity=max(int(settings.READ_RATE_BURST), 1),
            ms_per_token=1000 / rate,
            now=now,
        )
    except redis.RedisError:
        return None
    return None if granted else max(1, math.ceil(wait_ms / 1000))


def results_judge(*, game: Game, rules: Rules, results: list[tuple[str, int, int]], now: datetime) -> list[Verdict]:
    """The one seam where every submitted result gets its status. `results` is (player_id, points,
    duration_s) for a whole batch, in order.

    Banned players' results are `rejected` (`banned`); plausibility rules (GameRules): a match
    shorter than `min_duration_s` is `rejected` (`implausible`), more than `max_points_per_minute`
    goes to review (`points_per_minute`). Then per-player token buckets: a burst beyond
    the bucket is quarantined (`pending_review`, reason `rate`), not refused. One Lua call for the
    batch; the buckets fail open when Redis is down.
    """
    verdicts = [ACCEPTED] * len(results)
    if not results:
        return verdicts
    banned = set(
        Ban.objects.filter(
            game=game, lifted_at__isnull=True, player_id__in={player_id for player_id, _, _ in results}
        ).values_list("player_id", flat=True)
    )
    for i, (player_id, points, duration_s) in enumerate(results):
        if player_id in banned:
            verdicts[i] = BANNED
        elif rules.min_duration_s and duration_s < rules.min_duration_s:
            verdicts[i] = IMPLAUSIBLE
        elif rules.max_points_per_minute and points * 60 > rules.max_points_per_minute * max(duration_s, 1):
            verdicts[i] = POINTS_PER_MINUTE
    if rules.max_matches_per_hour:
        _bucket_judge(
            game,
            results,
            verdicts,
            key=redis_boards.player_hourly_bucket_key,
            capacity=rules.max_matches_per_hour,
            ms_per_token=3_600_000 / rules.max_matches_per_hour,
            verdict=MATCHES_PER_HOUR,
            now=now,
        )
    if rules.player_burst == 0 or rules.player_refill_s == 0:
        return verdicts
    _bucket_judge(
        game,
        results,
        verdicts,
        key=redis_boards.player_bucket_key,
        capacity=rules.player_burst,
        ms_per_token=rules.player_refill_s * 1000,
        verdict=RATE,
        now=now,
    )
    return verdicts


def _bucket_judge(
    game: Game,
    results: list[tuple[str, int, int]],
    verdicts: list[Verdict],
    *,
    key,
    capacity: int,
    ms_per_token: float,
    verdict: Verdict,
    now: datetime,
) -> None:
    """Spend one token per still-accepted result from each player's bucket (one Lua call); a
    result without a token gets `verdict`. Fails open when Redis is down."""
    wanted: dict[str, int] = {}
    for i, (player_id, _, _) in enumerate(results):
        if verdicts[i] is ACCEPTED:
            wanted[player_id] = wanted.get(player_id, 0) + 1
    if not wanted:
        return
    players = sorted(wanted)
    try:
        granted = _spend(
            [key(game.slug, p) for p in players],
            [wanted[p] for p in players],
            capacity=capacity,
            ms_per_token=ms_per_token,
            now=now,
        )
    except redis.RedisError as exc:
        logger.warning("player buckets skipped, Redis unavailable: %s", exc)
        return
    left = {p: g for p, (g, _) in zip(players, granted, strict=True)}
    for i, (player_id, _, _) in enumerate(results):
        if verdicts[i] is not ACCEPTED:
            continue  # judged already: rules come before buckets, and spend no tokens
        if left[player_id] > 0:
            left[player_id] -= 1
        else:
            verdicts[i] = verdict
