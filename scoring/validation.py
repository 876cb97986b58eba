"""Strict validation of submitted matches, with DRF-shaped field errors.

Hand-written rather than DRF serializer fields because it runs for every result of every batch
(up to 100,000 results a request) and must be strict where DRF coerces: "10", 10.0, true and
null are not points, and a number is not a player id.
"""

import re
import uuid
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, NamedTuple

from django.conf import settings

from common.api_errors import ApiError
from common.formats import PLAYER_ID_RE, REGION_RE, parse_time
from common.operations import digits_only
from seasons.models import Game

DIMENSION_VALUE_RE = re.compile(r"^[a-z0-9-]{1,23}$")
MAX_RESULTS = 100
MAX_DURATION_S = 7 * 86400
MAX_DISPLAY_NAME = 100

Errors = dict[str, Any]


# Named tuples, not frozen dataclasses: as immutable, and a third of the cost to make (a batch makes
# one of each per result and per match; measured 1.5 us against 2.5 us each on these 2 cores).
class ResultIn(NamedTuple):
    player_id: str
    points: int
    display_name: str | None
    region: str | None
    extra_boards: tuple[str, ...] = ()


class MatchIn(NamedTuple):
    match_id: uuid.UUID
    played_at: datetime
    duration_s: int
    season_id: int | None
    results: tuple[ResultIn, ...]
    tournaments: tuple[str, ...] = ()  # the tournament ids it names, sorted, each once

    def canonical(self) -> dict[str, Any]:
        """The parsed content compared for idempotency (key order and result order do not matter).
        `tournaments` only when named: the hashes of matches stored before it existed stay valid."""
        content: dict[str, Any] = {
            "match_id": str(self.match_id),
            "played_at": _isoformat(self.played_at),
            "duration_s": self.duration_s,
            "season": self.season_id,
            "results": sorted(
                ([r.player_id, r.points, r.display_name, r.region, list(r.extra_boards)] for r in self.results),
                key=_first,
            ),
        }
        if self.tournaments:
            content["tournaments"] = list(self.tournaments)
        return content


def _first(row: list[Any]) -> Any:
    return row[0]


@lru_cache(maxsize=4096)
def _isoformat(moment: datetime) -> str:
    # The matches of a batch share a few played_at values: each is formatted once.
    return moment.isoformat()


@lru_cache(maxsize=4096)
def _played_at(raw: str) -> datetime | None:
    return parse_time(raw)


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
MATCH_FIELDS = frozenset({"match_id", "played_at", "duration_s", "season", "results", "tournaments"})
TOURNAMENT_ID_RE = re.compile(r"^[a-z0-9-]{1,40}$")
MAX_TOURNAMENTS = 10


def _unknown(raw: dict[str, Any], allowed: frozenset[str]) -> Errors:
    """Fields the contract does not have are refused, not ignored: nobody mass-assigns `status`."""
    if raw.keys() <= allowed:
        return {}
    return {name: ["Unknown field."] for name in raw if name not in allowed}


@lru_cache(maxsize=256)
def _result_fields(dimensions: tuple[str, ...]) -> frozenset[str]:
    return RESULT_FIELDS | frozenset(dimensions)


def _result(raw: Any, max_points: int, dimensions: tuple[str, ...] = ()) -> tuple[ResultIn | None, Errors]:
    plain = _plain_result(raw, max_points, dimensions)
    if plain is not None:
        return plain, {}
    return _result_checked(raw, max_points, dimensions)


def _plain_result(raw: Any, max_points: int, dimensions: tuple[str, ...]) -> ResultIn | None:
    """The result when it passes every check of `_result_checked`, by the shortest way (nearly every
    result of a batch does); None means "check it in full", never "invalid"."""
    if dimensions or type(raw) is not dict or not raw.keys() <= RESULT_FIELDS:
        return None
    player_id = raw.get("player_id")
    points = raw.get("points")
    if type(player_id) is not str or type(points) is not int or not 0 <= points <= max_points:
        return None
    if not PLAYER_ID_RE.match(player_id):
        return None
    display_name = raw.get("display_name")
    if display_name is not None:
        if type(display_name) is not str:
            return None
        display_name = display_name.strip()
        if not 1 <= len(display_name) <= MAX_DISPLAY_NAME:
            return None
    region = raw.get("region")
    if region is not None and (type(region) is not str or region == "global" or not REGION_RE.match(region)):
        return None
    return ResultIn(player_id, points, display_name or None, region)


def _result_checked(raw: Any, max_points: int, dimensions: tuple[str, ...]) -> tuple[ResultIn | None, Errors]:
    if not isinstance(raw, dict):
        return None, {"non_field_errors": ["Each result must be an object."]}
    errors: Errors = _unknown(raw, _result_fields(dimensions))
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
    plain = _plain_match(raw, match_id, max_points, _latest(now, max_future_s), dimensions)
    if plain is not None:
        return plain, {}
    return _match_checked(raw, match_id, max_points, now, max_future_s, dimensions)


def _match_checked(
    raw: Any, match_id: uuid.UUID, max_points: int, now: datetime, max_future_s: int, dimensions: tuple[str, ...]
) -> tuple[MatchIn | None, Errors]:
    """`validate_match` in full, every field checked and every error said (what `_plain_match`
    leaves: an invalid match, or one with a season or a result that needs the long way)."""
    if not isinstance(raw, dict):
        return None, {"non_field_errors": ["The body must be a JSON object."]}
    errors: Errors = _unknown(raw, MATCH_FIELDS)
    played_raw = raw.get("played_at")
    played_at = _played_at(played_raw) if type(played_raw) is str else None
    if "played_at" not in raw:
        errors["played_at"] = ["This field is required."]
    elif played_at is None:
        errors["played_at"] = ["An ISO 8601 time with a zone, e.g. 2026-10-13T20:14:07Z."]
    elif played_at > _latest(now, max_future_s):
        errors["played_at"] = [f"played_at is more than {max_future_s} s ahead of the server's clock."]
    duration_s = raw.get("duration_s")
    if "duration_s" not in raw:
        errors["duration_s"] = ["This field is required."]
    elif not isinstance(duration_s, int) or isinstance(duration_s, bool) or not 0 <= duration_s <= MAX_DURATION_S:
        errors["duration_s"] = [f"duration_s must be an integer from 0 to {MAX_DURATION_S}."]
    season_id = _season_checked(raw.get("season"), errors)
    results = _results_checked(raw, max_points, dimensions, errors)
    tournaments = _tournaments_checked(raw.get("tournaments"), errors)
    if errors:
        return None, errors
    assert played_at is not None and isinstance(duration_s, int)
    return MatchIn(match_id, played_at, duration_s, season_id, tuple(results), tournaments), {}


def _tournaments_checked(raw: Any, errors: Errors) -> tuple[str, ...]:
    """The tournament ids a match names (at most MAX_TOURNAMENTS), sorted and each once; an error
    into `errors` when the list is malformed. Whether the game has them is the service's check."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_TOURNAMENTS:
        errors["tournaments"] = [f"A list of at most {MAX_TOURNAMENTS} tournament ids."]
        return ()
    if not all(isinstance(t, str) and TOURNAMENT_ID_RE.match(t) for t in raw):
        errors["tournaments"] = ["A tournament id is 1 to 40 of [a-z0-9-]."]
        return ()
    return tuple(sorted(set(raw)))


def _season_checked(season_raw: Any, errors: Errors) -> int | None:
    """The season id asked for (a positive integer, or its digits), None when none is; an error
    into `errors` when it is not one."""
    if season_raw is None:
        return None
    if is_int(season_raw) and season_raw > 0:
        return int(season_raw)
    if isinstance(season_raw, str) and digits_only(season_raw) and len(season_raw) < 19:
        return int(season_raw)
    errors["season"] = ["A season id, as listed by /seasons."]
    return None


def _results_checked(
    raw: dict[str, Any], max_points: int, dimensions: tuple[str, ...], errors: Errors
) -> list[ResultIn]:
    """The results that pass, each checked (by the short way first); their errors into `errors`
    (one dict per item, in order), or the list's own: missing, too short or long, repeated ids."""
    results_raw = raw.get("results")
    results: list[ResultIn] = []
    if "results" not in raw:
        errors["results"] = ["This field is required."]
    elif not isinstance(results_raw, list) or not 1 <= len(results_raw) <= MAX_RESULTS:
        errors["results"] = [f"results must be a list of 1 to {MAX_RESULTS} items."]
    else:
        item_errors: list[Errors] = []
        for item in results_raw:
            parsed = _plain_result(item, max_points, dimensions)
            item_error: Errors = {}
            if parsed is None:
                parsed, item_error = _result_checked(item, max_points, dimensions)
            item_errors.append(item_error)
            if parsed is not None:
                results.append(parsed)
        if any(item_errors):
            errors["results"] = item_errors
        elif len(results) > 1:
            ids = [r.player_id for r in results]
            duplicates = sorted({pid for pid in ids if ids.count(pid) > 1}) if len(set(ids)) != len(ids) else []
            if duplicates:
                errors["results"] = [f"Player ids must be unique within a match; repeated: {', '.join(duplicates)}."]
    return results


def _plain_match(
    raw: Any, match_id: uuid.UUID, max_points: int, latest: datetime, dimensions: tuple[str, ...]
) -> MatchIn | None:
    """The match when it passes every check of `validate_match`, by the shortest way (no season,
    every result plain); None means "check it in full", never "invalid"."""
    if type(raw) is not dict or not raw.keys() <= MATCH_FIELDS or raw.get("season") is not None:
        return None
    if "tournaments" in raw:
        return None
    played_raw = raw.get("played_at")
    duration_s = raw.get("duration_s")
    results_raw = raw.get("results")
    if type(played_raw) is not str or type(duration_s) is not int or not 0 <= duration_s <= MAX_DURATION_S:
        return None
    if type(results_raw) is not list or not 1 <= len(results_raw) <= MAX_RESULTS:
        return None
    played_at = _played_at(played_raw)
    if played_at is None or played_at > latest:
        return None
    results = []
    for item in results_raw:
        result = _plain_result(item, max_points, dimensions)
        if result is None:
            return None
        results.append(result)
    if len(results) > 1 and len({r.player_id for r in results}) != len(results):
        return None
    return MatchIn(match_id, played_at, duration_s, None, tuple(results))


@lru_cache(maxsize=64)
def _latest(now: datetime, max_future_s: int) -> datetime:
    """The latest played_at accepted at `now` (one per batch: its matches share `now`)."""
    return now + timedelta(seconds=max_future_s)


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
        dimensions=tuple(game.dimensions) if game.dimensions else (),
    )
