"""Test helpers of the tournaments (for their own tests and the apps above): signed requests and
tournament bodies."""

import json
from datetime import datetime, timedelta
from typing import Any

from django.test import Client
from django.utils import timezone

from anticheat.models import ServerKey
from common.formats import iso
from common.signing import signed_headers
from competitions import keys
from competitions.keys import ATTEMPTS_VERSION


def signed_call(client: Client, key: ServerKey, method: str, path: str, body: Any = None) -> Any:
    """A request signed with `key` (a JSON body when given)."""
    raw = json.dumps(body).encode() if body is not None else b""
    headers = signed_headers(key_id=key.key_id, secret=key.secret, method=method, path=path, body=raw)
    return client.generic(method, path, data=raw, content_type="application/json", headers=headers)


def cup_body(*, starts_at: datetime | None = None, duration_s: int = 3600, **extra: Any) -> dict[str, Any]:
    """A tournament's configuration that started a minute ago (or at `starts_at`)."""
    start = starts_at or timezone.now().replace(microsecond=0) - timedelta(seconds=60)
    body: dict[str, Any] = {"title": "Spring Cup", "starts_at": iso(start), "duration_s": duration_s}
    for name, value in extra.items():
        body[name] = iso(value) if isinstance(value, datetime) else value
    return body


def without_version(attempts: dict[str, str]) -> dict[str, str]:
    """An attempts hash without its version field (it counts changes: a rebuilt hash starts anew)."""
    return {player: count for player, count in attempts.items() if player != ATTEMPTS_VERSION}


def period_state(redis: Any, game: str, tournament: str, period: int) -> tuple[Any, Any, Any]:
    """A period's board, attempts (without the version field) and entrants, as Redis holds them."""
    return (
        dict(redis.zrange(keys.board_key(game, tournament, period), 0, -1, withscores=True)),
        without_version(redis.hgetall(keys.attempts_key(game, tournament, period))),
        redis.smembers(keys.entrants_key(game, tournament, period)),
    )


def league_body(*, starts_at: datetime | None = None, **extra: Any) -> dict[str, Any]:
    """A weekly league's configuration (three divisions, cohorts of 30) that started a minute ago
    (or at `starts_at`) with a reset every minute unless told."""
    start = starts_at or timezone.now().replace(second=0, microsecond=0) - timedelta(seconds=60)
    body: dict[str, Any] = {
        "title": "Weekly League",
        "starts_at": iso(start),
        "reset": "* * * * *",
        "cohort_size": 30,
        "scoring": "sum",
        "demote_idle": False,
        "divisions": [
            {"name": "bronze", "promote": 10, "demote": 0},
            {"name": "silver", "promote": 7, "demote": 5},
            {"name": "gold", "promote": 0, "demote": 5},
        ],
    }
    for name, value in extra.items():
        body[name] = iso(value) if isinstance(value, datetime) else value
    return body


LEAGUE_DIVISIONS = [
    {"name": "bronze", "promote": 1, "demote": 0},
    {"name": "silver", "promote": 1, "demote": 1},
    {"name": "gold", "promote": 0, "demote": 1},
]


def make_league(game: Any, slug: str = "weekly", *, created_at: datetime | None = None, **config: Any) -> Any:
    """A league (cohorts of 3 unless told) whose hourly periods started three hours ago (period 4
    runs now)."""
    from .league_models import League

    start = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
    values: dict[str, Any] = {
        "title": "Weekly",
        "starts_at": start,
        "reset": "0 * * * *",
        "cohort_size": 3,
        "divisions": LEAGUE_DIVISIONS,
    }
    values.update(config)
    return League.objects.create(game=game, slug=slug, created_at=created_at or start, **values)
