"""Helpers for the test suites: games, keys, signed requests and draining the apply queue."""

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from django.test import Client
from django.utils import timezone

from anticheat.models import GameRules, ServerKey
from anticheat.services import server_key_create, signed_headers
from scoring.board_writer import events_apply_by_id
from scoring.models import EventStatus, ScoreEvent
from scoring.services import matches_submit
from scoring.validation import validate_match
from seasons.models import Game
from seasons.services import game_create


def make_game(
    slug: str = "arena",
    *,
    tie_rule: str = "competition",
    start: datetime | None = None,
    days: float = 90,
    max_points: int = 10_000,
    rate_limits: bool = False,
) -> Game:
    """A game for tests. Rate limits are off unless asked for: most tests send bursts on purpose."""
    game, _ = game_create(
        slug=slug,
        name=slug.title(),
        tie_rule=tie_rule,
        max_points_per_match=max_points,
        season_start=start or timezone.now() - timedelta(days=1),
        season_days=days,
    )
    if not rate_limits:
        GameRules.objects.create(game=game, player_burst=0, key_rate_per_s=0)
    return game


def make_key(game: Game) -> ServerKey:
    return server_key_create(game=game)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def result_path(game: Game | str, match_id: uuid.UUID | str) -> str:
    slug = game if isinstance(game, str) else game.slug
    return f"/api/v1/games/{slug}/matches/{match_id}/results"


def submit_direct(game: Game, key: ServerKey, body: dict[str, Any], *, now: datetime, match_id=None):
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


def drain() -> int:
    """Apply every accepted, unapplied event in-process, as the worker would."""
    ids = list(
        ScoreEvent.objects.filter(status=EventStatus.ACCEPTED, applied_at__isnull=True).values_list("id", flat=True)
    )
    if ids:
        events_apply_by_id(event_ids=ids, dedup_ttl_s=3600)
    return len(ids)
