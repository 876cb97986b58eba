"""Test helpers of the write path (for scoring's tests and the system tests above it): games with
the buckets off, keys, match bodies, signed requests, and draining the apply queue in-process."""

import json
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.test import Client
from django.utils import timezone

from anticheat.models import ServerKey
from anticheat.testing import limits_off
from anticheat.testing import make_key as make_key  # re-exported: tests of the write path need keys
from boards.writer import EventRow
from common.formats import iso
from common.signing import signed_headers
from seasons.models import Game
from seasons.testing import make_game as make_season_game

from .models import EventStatus, ScoreEvent, UnappliedEvent
from .outbox import events_apply_by_id
from .services import MatchOutcome, matches_submit
from .validation import validate_match


def make_game(slug: str = "arena", *, rate_limits: bool = False, **season: Any) -> Game:
    """`seasons.testing.make_game` with the buckets off unless asked for: most tests of the write
    path send bursts on purpose."""
    game = make_season_game(slug, **season)
    if not rate_limits:
        limits_off(game)
    return game


def match_body(results: list[dict[str, Any]], played_at: datetime | None = None, **extra: Any) -> dict[str, Any]:
    return {"played_at": iso(played_at or timezone.now()), "duration_s": 540, "results": results, **extra}


def signed_post(
    client: Client,
    key: ServerKey,
    path: str,
    body: bytes | str | dict[str, Any],
    *,
    timestamp: int | None = None,
    secret: str | None = None,
    tamper: bytes | None = None,
):
    """POST `body` signed with `key`; `tamper` replaces the body after signing."""
    if isinstance(body, dict):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    headers = signed_headers(
        key_id=key.key_id, secret=secret or key.secret, method="POST", path=path, body=body, timestamp=timestamp
    )
    return client.generic(
        "POST",
        path,
        data=tamper if tamper is not None else body,
        content_type="application/json",
        headers=headers,
    )


def signed_get(client: Client, key: ServerKey, path: str, *, timestamp: int | None = None, secret: str | None = None):
    """GET `path` (with its query) signed with `key`, as a studio's backend reads the signed reads."""
    headers = signed_headers(
        key_id=key.key_id, secret=secret or key.secret, method="GET", path=path, body=b"", timestamp=timestamp
    )
    return client.get(path, headers=headers)


def result_path(game: Game | str, match_id: uuid.UUID | str) -> str:
    slug = game if isinstance(game, str) else game.slug
    return f"/api/v1/games/{slug}/matches/{match_id}/results"


def submit_direct(
    game: Game, key: ServerKey, body: dict[str, Any], *, now: datetime, match_id: uuid.UUID | None = None
) -> MatchOutcome:
    """The service call the API makes, with an injectable clock (for accept times and periods)."""
    match_id = match_id or uuid.uuid4()
    parsed, errors = validate_match(
        body,
        match_id=match_id,
        max_points=game.max_points_per_match,
        now=now,
        max_future_s=60,
        dimensions=tuple(game.dimensions or ()),
    )
    [outcome] = matches_submit(game=game, key=key, matches=[(match_id, parsed, errors)], now=now)
    return outcome


def unapplied() -> QuerySet[ScoreEvent]:
    """The accepted events not on the boards yet: those in the outbox."""
    return ScoreEvent.objects.filter(status=EventStatus.ACCEPTED, unapplied__isnull=False)


def applied(events: QuerySet[ScoreEvent]) -> QuerySet[ScoreEvent]:
    """Those of `events` that are accepted and applied (no longer in the outbox)."""
    return events.filter(status=EventStatus.ACCEPTED, unapplied__isnull=True)


def outbox_restore(events: Iterable[ScoreEvent]) -> int:
    """Put events back in the outbox with their own accept times, as if the worker had died between
    its Lua call and the delete of their rows (their dedup markers stay). Returns how many."""
    rows = [UnappliedEvent(event_id=e.id, accepted_at=e.accepted_at, played_at=e.played_at) for e in events]
    UnappliedEvent.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["event"], update_fields=["accepted_at", "enqueued_at"]
    )
    return len(rows)


def outbox_clear(events: Iterable[ScoreEvent]) -> int:
    """Take events out of the outbox without applying them: the ledger says applied, whatever
    Redis holds (a failover that lost the apply)."""
    return UnappliedEvent.objects.filter(event_id__in=[e.id for e in events]).delete()[0]


def drain() -> int:
    """Apply every accepted, unapplied event in-process, as the worker would."""
    ids = list(unapplied().values_list("id", flat=True))
    if ids:
        events_apply_by_id(event_ids=ids, dedup_ttl_s=3600)
    return len(ids)


def event_rows(events: Iterable[ScoreEvent]) -> list[EventRow]:
    """Ledger events as the board writer takes them (to apply them again, as a redelivery would)."""
    return [
        EventRow(e.id, e.season_id, e.player_id, e.points, e.accepted_at, e.day, e.region, tuple(e.extra_boards or ()))
        for e in events
    ]


def cohort_boards_read(league: Any, index: int) -> dict[tuple[int, int], dict[str, int]]:
    """Every cohort board of a league period with members, as {(division, number): {player:
    points shown}}, read straight from Redis (SCAN over the period's keys)."""
    from boards.codec import ScoreCodec
    from common.redis import boards_client
    from competitions import league_keys
    from competitions.league_boards import cohort_time_bits
    from competitions.league_periods import league_period

    period = league_period(league, index)
    assert period is not None
    codec = ScoreCodec(cohort_time_bits(period))
    redis = boards_client()
    found: dict[tuple[int, int], dict[str, int]] = {}
    scan = redis.scan_iter(match=league_keys.cohort_boards_pattern(league.game.slug, league.slug, index), count=1000)
    for key in sorted({str(k) for k in scan if not str(k).endswith((":d", ":v"))}):
        parts = key.split(":c:", 1)[1].split(":")
        division, number = parts[0], parts[1]
        members: list[tuple[str, float]] = list(redis.zrange(key, 0, -1, withscores=True))  # type: ignore[arg-type]
        if members:
            found[(int(division), int(number))] = {str(m): codec.points(s) for m, s in members}
    return found


def cohort_ledger(league: Any, index: int) -> dict[tuple[int, int], dict[str, int]]:
    """What the ledger says the cohort boards hold, computed apart from the code under test: each
    player's results of the period still accepted, summed (or their best), hidden and deleted
    players left out."""
    from boards.models import Player

    from .league_models import LeagueResult

    gone = set(Player.objects.filter(game_id=league.game_id, hidden=True).values_list("player_id", flat=True)) | set(
        Player.objects.filter(game_id=league.game_id, deleted_at__isnull=False).values_list("player_id", flat=True)
    )
    rows = LeagueResult.objects.filter(
        league=league, period=index, number__isnull=False, event__status=EventStatus.ACCEPTED
    ).values_list("division", "number", "player_id", "event__points")
    found: dict[tuple[int, int], dict[str, int]] = {}
    for division, number, player_id, points in rows:
        if player_id in gone:
            continue
        cohort = found.setdefault((division or 0, number or 0), {})
        held = cohort.get(player_id)
        if held is None:
            cohort[player_id] = points
        else:
            cohort[player_id] = max(held, points) if league.scoring == "best" else held + points
    return found
