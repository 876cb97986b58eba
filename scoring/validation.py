"""Strict validation of submitted matches, with DRF-shaped field errors.

Hand-written rather than DRF serializer fields because it runs for every result of every batch
(up to 100,000 results a request) and must be strict where DRF coerces: "10", 10.0, true and
null are not points, and a number is not a player id.
"""

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from common.api_errors import ApiError
from common.formats import PLAYER_ID_RE, REGION_RE, parse_time
from seasons.models import Game

DIMENSION_VALUE_RE = re.compile(r"^[a-z0-9-]{1,23}$")
MAX_RESULTS = 100
MAX_DURATION_S = 7 * 86400
MAX_DISPLAY_NAME = 100

Errors = dict[str, Any]


@dataclass(frozen=True)
class ResultIn:
    player_id: str
    points: int
    display_name: str | None
    region: str | None
    extra_boards: tuple[str, ...] = ()


@dataclass(frozen=True)
class MatchIn:
    match_id: uuid.UUID
    played_at: datetime
    duration_s: int
    season_id: int | None
    results: tuple[ResultIn, ...]

    def canonical(self) -> dict[str, Any]:
        """The parsed content compared for idempotency (key order and result order do not matter)."""
        return {
            "match_id": str(self.match_id),
            "played_at": self.played_at.isoformat(),
            "duration_s": self.duration_s,
            "season": self.season_id,
            "results": sorted(
                ([r.player_id, r.points, r.display_name, r.region, list(r.extra_boards)] for r in self.results),
                key=lambda row: row[0],
            ),
        }


def is_int(value: Any) -> bool:
    """An integer, and not a bool (JSON true is not 1 here)."""
    return type(value) is int


def parse_match_id(raw: Any) -> uuid.UUID | None:
    if not isinstance(raw, str):
        return None
    try:
        return uuid.UUID(raw)
    except ValueError:
        return None


RESULT_FIELDS = frozenset({"player_id", "points", "display_name", "region"})
MATCH_FIELDS = frozenset({"match_id", "played_at", "duration_s", "season", "results"})


def _unknown(raw: dict[str, Any], allowed: frozenset[str] | set[str]) -> Errors:
    """Fields the contract does not have are refused, not ignored: nobody mass-assigns `status`."""
    return {name: ["Unknown field."] for name in raw if name not in allowed}


def _result(raw: Any, max_points: int, dimensions: tuple[str, ...] = ()) -> tuple[ResultIn | None, Errors]:
    if not isinstance(raw, dict):
        return None, {"non_field_errors": ["Each result must be an object."]}
    errors: Errors = _unknown(raw, RESULT_FIELDS | set(dimensions))
    player_id = raw.get("player_id")
    if "player_id" not in raw:
        errors["player_id"] = ["This field is required."]
    elif not isinstance(player_id, str) or not PLAYER_ID_RE.match(player_id):
        errors["player_id"] = ["A player id is a string of 1-64 characters from [A-Za-z0-9_.:-]."]
    points = raw.get("points")
    if "points" not in raw:
        errors["points"] = ["This field is required."]
    elif not isinstance(points, int) or isinstance(points, bool):
        errors["points"] = ["Points must be an integer."]
    elif not 0 <= points <= max_points:
        errors["points"] = [f"Points must be between 0 and {max_points}."]
    display_name = raw.get("display_name")
    if display_name is not None and (
        not isinstance(display_name, str) or not 1 <= len(display_name.strip()) <= MAX_DISPLAY_NAME
    ):
        errors["display_name"] = [f"A display name is a string of 1-{MAX_DISPLAY_NAME} characters."]
    region = raw.get("region")
    if region is not None and (not isinstance(region, str) or not REGION_RE.match(region) or region == "global"):
        errors["region"] = ["A region is 2-16 characters from [a-z0-9-] (and not 'global')."]
    extra: list[str] = []
    for dimension in dimensions:
        value = raw.get(dimension)
        if value is None:
            continue
        if not isinstance(value, str) or not DIMENSION_VALUE_RE.match(value):
            errors[dimension] = ["A dimension value is 1-23 characters from [a-z0-9-]."]
        else:
            extra.append(f"{dimension}-{value}")
    if errors:
        return None, errors
    assert isinstance(player_id, str) and isinstance(points, int)
    return ResultIn(
        player_id=player_id,
        points=points,
        display_name=display_name.strip() if display_name else None,
        region=region,
        extra_boards=tuple(extra),
    ), {}


def validate_match(
    raw: Any,
    *,
    match_id: uuid.UUID,
    max_points: int,
    now: datetime,
    max_future_s: int,
    dimensions: tuple[str, ...] = (),
) -> tuple[MatchIn | None, Errors]:
    """Parse one match body; on failure return field errors in DRF's shape."""
    if not isinstance(raw, dict):
        return None, {"non_field_errors": ["The body must be a JSON object."]}
    errors: Errors = _unknown(raw, MATCH_FIELDS)
    played_at = parse_time(raw.get("played_at"))
    if "played_at" not in raw:
        errors["played_at"] = ["This field is required."]
    elif played_at is None:
        errors["played_at"] = ["An ISO 8601 time with a zone, e.g. 2026-10-13T20:14:07Z."]
    elif played_at > now + timedelta(seconds=max_future_s):
        errors["played_at"] = [f"played_at is more than {max_future_s} s ahead of the server's clock."]
    duration_s = raw.get("duration_s")
    if "duration_s" not in raw:
        errors["duration_s"] = ["This field is required."]
    elif not isinstance(duration_s, int) or isinstance(duration_s, bool) or not 0 <= duration_s <= MAX_DURATION_S:
        errors["duration_s"] = [f"duration_s must be an integer from 0 to {MAX_DURATION_S}."]
    season_raw = raw.get("season")
    season_id: int | None = None
    if season_raw is not None:
        if is_int(season_raw) and season_raw > 0:
            season_id = season_raw
        elif isinstance(season_raw, str) and season_raw.isdigit() and len(season_raw) < 19:
            season_id = int(season_raw)
        else:
            errors["season"] = ["A season id, as listed by /seasons."]
    results_raw = raw.get("results")
    results: list[ResultIn] = []
    if "results" not in raw:
        errors["results"] = ["This field is required."]
    elif not isinstance(results_raw, list) or not 1 <= len(results_raw) <= MAX_RESULTS:
        errors["results"] = [f"results must be a list of 1 to {MAX_RESULTS} items."]
    else:
        item_errors: list[Errors] = []
        for item in results_raw:
            parsed, item_error = _result(item, max_points, dimensions)
            item_errors.append(item_error)
            if parsed is not None:
                results.append(parsed)
        if any(item_errors):
            errors["results"] = item_errors
        else:
            ids = [r.player_id for r in results]
            duplicates = sorted({pid for pid in ids if ids.count(pid) > 1}) if len(set(ids)) != len(ids) else []
            if duplicates:
                errors["results"] = [f"Player ids must be unique within a match; repeated: {', '.join(duplicates)}."]
    if errors:
        return None, errors
    assert played_at is not None and isinstance(duration_s, int)
    return MatchIn(
        match_id=match_id,
        played_at=played_at,
        duration_s=duration_s,
        season_id=season_id,
        results=tuple(results),
    ), {}


def single_match_parse(
    raw: Any, *, raw_match_id: str, game: Game, now: datetime
) -> tuple[uuid.UUID, MatchIn | None, Errors]:
    """The single-result endpoint's input, for its Django view and its fast path alike: the match
    id from the path (a 400 when it is not a UUID), then the body against the game's limits."""
    match_id = parse_match_id(raw_match_id)
    if match_id is None:
        raise ApiError(400, "invalid", "The match id must be a UUID.")
    parsed, errors = game_match_validate(raw, match_id=match_id, game=game, now=now)
    return match_id, parsed, errors


def game_match_validate(raw: Any, *, match_id: uuid.UUID, game: Game, now: datetime) -> tuple[MatchIn | None, Errors]:
    """One match against the game's limits (max points, dimensions) and the clock's
    (PLAYED_AT_MAX_FUTURE_S): the single endpoint, its fast path and each match of a batch."""
    return validate_match(
        raw,
        match_id=match_id,
        max_points=game.max_points_per_match,
        now=now,
        max_future_s=settings.PLAYED_AT_MAX_FUTURE_S,
        dimensions=tuple(game.dimensions or ()),
    )
