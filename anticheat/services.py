"""Trust policy: server keys and signatures, rate buckets, plausibility rules, the judge every
submitted result passes through, ban records, the anomaly policy, and the audit log.

Nothing here reads the ledger or the boards: the callers (scoring) hand in what a decision needs.
"""

import hmac
import logging
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from common.api_errors import Problem
from common.db import model_columns, models_from_rows, models_where
from common.operations import digits_only
from common.outage import OutageLog
from common.ratelimit import BUCKET_LIB, LocalBuckets, bucket_ttl_s, buckets_spend, retry_after_s
from common.redis import client, lua_path, lua_script
from common.signing import HEADER_KEY, HEADER_SIGNATURE, HEADER_TIMESTAMP, signature_compute
from seasons.models import Game

from . import keys
from .models import AuditEntry, Ban, GameRules, ServerKey

logger = logging.getLogger(__name__)

_JUDGE = BUCKET_LIB + "+" + lua_path(__file__, "judge.lua")

# While Redis cannot be reached, the key and player buckets are spent in this process's memory
# (same limits, same keys): each web process then enforces every limit by itself, so a key gets at
# most its rate times the number of web processes, a player their burst once per process: nothing
# fails open without a bound.
_local_buckets = LocalBuckets()
_redis_outage = OutageLog(logger, "Redis (rate buckets)", "key and player buckets are spent in this process")


def local_buckets_forget() -> None:
    """Forget this process's stand-in buckets (tests)."""
    _local_buckets.clear()


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


def server_keys_by_id(key_ids: Iterable[str]) -> dict[str, ServerKey]:
    """The keys with these ids (and their games), in one query (fixed SQL, not a queryset: read by
    every group of single POSTs; see common/db.py)."""
    wanted = sorted(set(key_ids))
    if not wanted:
        return {}
    key_columns, width = model_columns(ServerKey, "k")
    game_columns, _ = model_columns(Game, "g")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {key_columns}, {game_columns} FROM {ServerKey._meta.db_table} k "
            f"JOIN {Game._meta.db_table} g ON g.id = k.game_id WHERE k.key_id = ANY(%s)",
            [wanted],
        )
        rows = cursor.fetchall()
    found = models_from_rows(ServerKey, rows, alias="k")
    for key, game in zip(found, models_from_rows(Game, rows, alias="g", offset=width), strict=True):
        key.game = game
    return {key.key_id: key for key in found}


def _key_read(key_id: str) -> ServerKey | None:
    return server_keys_by_id([key_id]).get(key_id)


NOT_AUTHENTICATED = Problem(401, "not_authenticated", "a signature header is missing")
SIGNATURE_REFUSED = Problem(
    401, "authentication_failed", "unknown, revoked or retired key, a bad signature, or a timestamp out of the window"
)
WRONG_GAME = Problem(403, "permission_denied", "the key belongs to another game")


def request_verify(
    *,
    game_slug: str,
    method: str,
    path: str,
    body: bytes,
    headers: Mapping[str, str],
    now: datetime,
    key_lookup: Callable[[str], ServerKey | None] = _key_read,
) -> ServerKey:
    """Check a signed request before anything parses its body.

    401 for a missing header, an unknown or revoked key, a bad signature or a timestamp more than
    SIGNATURE_MAX_SKEW_S from our clock (either side); 403 for a valid key of another game.
    `key_lookup` finds a key by id (the single-result path looks up a whole group's at once).
    """
    key_id = headers.get(HEADER_KEY)
    timestamp = headers.get(HEADER_TIMESTAMP)
    signature = headers.get(HEADER_SIGNATURE)
    if not key_id or not timestamp or not signature:
        raise NOT_AUTHENTICATED(
            f"Signed requests need the headers {HEADER_KEY}, {HEADER_TIMESTAMP} and {HEADER_SIGNATURE}."
        )
    if not digits_only(timestamp) or len(timestamp) > 12:
        raise SIGNATURE_REFUSED(f"{HEADER_TIMESTAMP} must be Unix time in whole seconds.")
    # Whole seconds on both sides: the header has whole seconds, so the server's clock is read the
    # same way (a request signed 300 s ago, to the second, is still in the window).
    if abs(int(timestamp) - int(now.timestamp())) > settings.SIGNATURE_MAX_SKEW_S:
        raise SIGNATURE_REFUSED(
            f"{HEADER_TIMESTAMP} is more than {settings.SIGNATURE_MAX_SKEW_S} s from the server's clock."
        )
    key = key_lookup(key_id)
    if key is None or key.revoked_at is not None or (key.expires_at is not None and key.expires_at <= now):
        raise SIGNATURE_REFUSED("Unknown, revoked or retired key.")
    expected = signature_compute(secret=key.secret, timestamp=timestamp, method=method, path=path, body=body)
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        raise SIGNATURE_REFUSED("The signature does not match the request.")
    if key.game.slug != game_slug:
        raise WRONG_GAME("This key belongs to another game.")
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
    """The game's limits: its GameRules where set, else the environment's defaults. Read on every
    request (one indexed row, fixed SQL: see common/db.py): a change a moderator saves is in
    force for the next request."""
    found = models_where(GameRules, "t.game_id = %s", [game.id])
    row = found[0] if found else None

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


def server_key_throttle(*, key: ServerKey, rules: Rules, now: datetime) -> int | None:
    """Spend one token of the key's request bucket: None if allowed, else Retry-After seconds.

    While Redis is down the bucket is this process's (see `_local_buckets`)."""
    if rules.key_rate_per_s == 0:
        return None
    [(granted, wait_ms)] = _key_buckets_spend(key=key, rules=rules, wanted=1, now=now)
    return None if granted else retry_after_s(wait_ms)


def server_key_spend(*, key: ServerKey, rules: Rules, wanted: int, now: datetime) -> int:
    """Take `wanted` tokens of the key's request bucket at once (a group of requests): how many it
    grants, in order. While Redis is down, as `server_key_throttle`."""
    if rules.key_rate_per_s == 0:
        return wanted
    [(granted, _)] = _key_buckets_spend(key=key, rules=rules, wanted=wanted, now=now)
    return granted


def _key_buckets_spend(*, key: ServerKey, rules: Rules, wanted: int, now: datetime) -> list[tuple[int, int]]:
    bucket = [keys.server_key_bucket_key(key.key_id)]
    capacity, ms_per_token = max(rules.key_burst, 1), 1000 / rules.key_rate_per_s
    try:
        spent = buckets_spend(keys=bucket, wants=[wanted], capacity=capacity, ms_per_token=ms_per_token, now=now)
    except redis.RedisError as exc:
        _redis_outage.failed(exc)
        return _local_buckets.spend(keys=bucket, wants=[wanted], capacity=capacity, ms_per_token=ms_per_token, now=now)
    _redis_outage.succeeded()
    return spent


def results_judge(*, game: Game, rules: Rules, results: list[tuple[str, int, int]], now: datetime) -> list[Verdict]:
    """The one seam where every submitted result gets its status. `results` is (player_id, points,
    duration_s) for a whole batch, in order.

    Banned players' results are `rejected` (`banned`); plausibility rules (GameRules): a match
    shorter than `min_duration_s` is `rejected` (`implausible`), more than `max_points_per_minute`
    goes to review (`points_per_minute`). Then per-player token buckets: a burst beyond
    the bucket is quarantined (`pending_review`, reason `rate`), not refused; so are results past
    `max_matches_per_hour` (reason `matches_per_hour`). One Lua call for every bucket of the batch;
    while Redis is down the buckets are this process's (see `_local_buckets`).
    """
    verdicts = [ACCEPTED] * len(results)
    if not results:
        return verdicts
    banned = _banned_among(game, {player_id for player_id, _, _ in results})
    for i, (player_id, points, duration_s) in enumerate(results):
        if player_id in banned:
            verdicts[i] = BANNED
        elif rules.min_duration_s and duration_s < rules.min_duration_s:
            verdicts[i] = IMPLAUSIBLE
        elif rules.max_points_per_minute and points * 60 > rules.max_points_per_minute * max(duration_s, 1):
            verdicts[i] = POINTS_PER_MINUTE
    _buckets_judge(game, rules, results, verdicts, now=now)
    return verdicts


def _banned_among(game: Game, player_ids: set[str]) -> set[str]:
    """Which of these players have an active ban (one statement; the ids travel as one string,
    player ids hold no comma)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT player_id FROM {Ban._meta.db_table} WHERE game_id = %s AND lifted_at IS NULL "
            "AND player_id = ANY(string_to_array(%s, ','))",
            [game.id, ",".join(player_ids)],
        )
        return {str(row[0]) for row in cursor.fetchall()}


def game_rules_set(*, game: Game, **limits: int | None) -> GameRules:
    """Set some of a game's limits (the others keep theirs, or the defaults); 0 switches one off."""
    unknown = set(limits) - {f.name for f in GameRules._meta.fields}
    if unknown:
        raise ValueError(f"no such limits: {', '.join(sorted(unknown))}")
    rules, _ = GameRules.objects.update_or_create(game=game, defaults=limits)
    return rules


def _buckets_judge(
    game: Game, rules: Rules, results: list[tuple[str, int, int]], verdicts: list[Verdict], *, now: datetime
) -> None:
    """Spend one token per still-accepted result from each player's hourly bucket, then from their
    burst bucket, in one Lua call for the batch (lua/judge.lua). A player's results past the hourly
    tokens become `matches_per_hour`, those past the burst tokens `rate`, in submission order.
    While Redis is down, from this process's buckets (`_judge_locally`)."""
    hourly = (
        (rules.max_matches_per_hour, 3_600_000 / rules.max_matches_per_hour) if rules.max_matches_per_hour else (0, 0)
    )
    burst = (
        (rules.player_burst, rules.player_refill_s * 1000) if rules.player_burst and rules.player_refill_s else (0, 0)
    )
    if not hourly[0] and not burst[0]:
        return
    wanted: dict[str, int] = {}
    for i, (player_id, _, _) in enumerate(results):
        if verdicts[i] is ACCEPTED:
            wanted[player_id] = wanted.get(player_id, 0) + 1
    if not wanted:
        return
    players = sorted(wanted)
    script_keys: list[str] = []
    for player_id in players:
        if hourly[0]:
            script_keys.append(keys.player_hourly_bucket_key(game.slug, player_id))
        if burst[0]:
            script_keys.append(keys.player_bucket_key(game.slug, player_id))
    now_ms = int(now.timestamp() * 1000)
    args: list[int | float] = [now_ms]
    for capacity, ms_per_token in (hourly, burst):
        args += [capacity, ms_per_token, bucket_ttl_s(capacity=capacity, ms_per_token=ms_per_token)]
    args += [wanted[p] for p in players]
    try:
        reply = lua_script(_JUDGE)(keys=script_keys, args=args, client=client())
    except redis.RedisError as exc:
        _redis_outage.failed(exc)
        reply = _judge_locally(script_keys, [wanted[p] for p in players], now_ms=now_ms, hourly=hourly, burst=burst)
    else:
        _redis_outage.succeeded()
    passed = {p: (int(reply[2 * i]), int(reply[2 * i + 1])) for i, p in enumerate(players)}
    seen: dict[str, int] = {}
    for i, (player_id, _, _) in enumerate(results):
        if verdicts[i] is not ACCEPTED:
            continue  # judged already: rules come before buckets, and spend no tokens
        nth = seen.get(player_id, 0)
        seen[player_id] = nth + 1
        hourly_passed, burst_passed = passed[player_id]
        if nth >= hourly_passed:
            verdicts[i] = MATCHES_PER_HOUR
        elif nth >= burst_passed:
            verdicts[i] = RATE


def _judge_locally(
    script_keys: list[str], wants: list[int], *, now_ms: int, hourly: tuple[int, float], burst: tuple[int, float]
) -> list[int]:
    """lua/judge.lua's reply, from this process's buckets (`_local_buckets`, while Redis is down)."""
    reply: list[int] = []
    k = 0
    for want in wants:
        hourly_passed = want
        if hourly[0]:
            hourly_passed, _ = _local_buckets.take(
                script_keys[k], want, now_ms=now_ms, capacity=hourly[0], ms_per_token=hourly[1]
            )
            k += 1
        burst_passed = hourly_passed
        if burst[0]:
            if hourly_passed > 0:
                burst_passed, _ = _local_buckets.take(
                    script_keys[k], hourly_passed, now_ms=now_ms, capacity=burst[0], ms_per_token=burst[1]
                )
            k += 1
        reply += [hourly_passed, burst_passed]
    return reply


def ban_record(*, game: Game, player_id: str, reason: str = "") -> Ban:
    """The player's active ban (idempotent: a player already banned keeps their one active ban)."""
    ban, _ = Ban.objects.get_or_create(game=game, player_id=player_id, lifted_at=None, defaults={"reason": reason})
    return ban


def audit(
    *,
    action: str,
    target: str,
    actor: User | None = None,
    actor_label: str = "",
    game: Game | None = None,
    reason: str = "",
) -> None:
    """One line of the audit log: who (a user, or the command or job that acted), what, on what, why."""
    AuditEntry.objects.create(
        actor=actor if getattr(actor, "pk", None) else None,
        actor_label=actor_label or (getattr(actor, "get_username", lambda: "")() or "system"),
        action=action,
        game=game,
        target=target,
        reason=reason,
    )


@dataclass(frozen=True)
class AnomalyPolicy:
    """Results above the cohort's `quantile` of points per match over the last `window_days` go to
    review, once the cohort holds at least `min_cohort` results."""

    quantile: float = 0.9999
    min_cohort: int = 10_000
    window_days: int = 7


ANOMALY_POLICY = AnomalyPolicy()


def anomalies_judge(*, policy: AnomalyPolicy, cohort_size: int, quantile_points: int | None) -> int | None:
    """The most points a result may have before the anomaly job withholds it (results at or below
    it that it withheld earlier are released); None: the cohort is too small to judge."""
    if cohort_size < policy.min_cohort or quantile_points is None:
        return None
    return quantile_points
