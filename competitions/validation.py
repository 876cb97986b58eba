"""Strict validation of a tournament's configuration (the signed PUT), with DRF-shaped field
errors: "3" is not a category, 1.0 not a limit, and an unknown field is refused."""

import itertools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson

from common.formats import parse_time

from .models import MAX_DURATION_S, MIN_DURATION_S, Order, Scoring
from .periods import BadCron, cron_check

MAX_JSON_BYTES = 4096
MAX_TITLE = 200
MAX_DESCRIPTION = 4000
MAX_BANDS = 100
FIELDS = (
    "title",
    "description",
    "category",
    "metadata",
    "scoring",
    "order",
    "starts_at",
    "ends_at",
    "duration_s",
    "reset",
    "grace_s",
    "max_entrants",
    "max_attempts",
    "join_required",
    "rewards",
)
DEFAULT_GRACE_S = 60
MAX_GRACE_S = 7 * 86400
MAX_LIMIT = 2**31 - 1

Errors = dict[str, list[str]]


@dataclass(frozen=True)
class TournamentIn:
    """A validated configuration, every field resolved (defaults filled in)."""

    title: str
    description: str
    category: int
    metadata: dict[str, Any]
    scoring: str
    order: str
    starts_at: datetime
    ends_at: datetime | None
    duration_s: int
    reset: str
    grace_s: int
    max_entrants: int | None
    max_attempts: int | None
    join_required: bool
    rewards: list[dict[str, Any]]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(data: dict[str, Any], name: str, low: int, high: int, errors: Errors, *, default: int | None) -> int | None:
    value = data.get(name, default)
    if value is None:
        return None
    if not _is_int(value) or not low <= value <= high:
        errors[name] = [f"An integer from {low} to {high}."]
        return None
    return int(value)


def _text(data: dict[str, Any], name: str, limit: int, errors: Errors, *, required: bool) -> str:
    value = data.get(name, None if required else "")
    if not isinstance(value, str) or (required and not value.strip()) or len(value) > limit:
        errors[name] = [f"A string of {'1' if required else '0'} to {limit} characters."]
        return ""
    return value


def _json_object(value: Any, name: str, errors: Errors) -> dict[str, Any]:
    if not isinstance(value, dict) or len(orjson.dumps(value)) > MAX_JSON_BYTES:
        errors[name] = [f"A JSON object of at most {MAX_JSON_BYTES} bytes."]
        return {}
    return value


def _choice(data: dict[str, Any], name: str, choices: list[str], default: str, errors: Errors) -> str:
    value = data.get(name, default)
    if value not in choices or not isinstance(value, str):
        errors[name] = [f"One of {', '.join(choices)}."]
        return default
    return value


def _time(data: dict[str, Any], name: str, errors: Errors) -> datetime | None:
    value = data.get(name)
    if value is None:
        return None
    moment = parse_time(value)
    if moment is None:
        errors[name] = ["An ISO 8601 time with a zone (2026-12-05T18:00:00Z)."]
    return moment


def _rewards(value: Any, errors: Errors) -> list[dict[str, Any]]:
    """Reward bands: 1-based, rank_from <= rank_to, disjoint; each reward a small JSON object."""
    if not isinstance(value, list) or len(value) > MAX_BANDS:
        errors["rewards"] = [f"A list of at most {MAX_BANDS} bands."]
        return []
    bands: list[dict[str, Any]] = []
    for i, band in enumerate(value):
        ok = isinstance(band, dict) and set(band) == {"rank_from", "rank_to", "reward"}
        ok = ok and _is_int(band["rank_from"]) and _is_int(band["rank_to"])
        ok = ok and 1 <= band["rank_from"] <= band["rank_to"]
        if not ok:
            errors["rewards"] = [f"Band {i}: {{rank_from, rank_to, reward}} with 1 <= rank_from <= rank_to."]
            return []
        reward_errors: Errors = {}
        _json_object(band["reward"], "reward", reward_errors)
        if reward_errors:
            errors["rewards"] = [f"Band {i}: reward must be a JSON object of at most {MAX_JSON_BYTES} bytes."]
            return []
        bands.append({"rank_from": band["rank_from"], "rank_to": band["rank_to"], "reward": band["reward"]})
    ordered = sorted(bands, key=lambda b: b["rank_from"])
    for before, after in itertools.pairwise(ordered):
        if after["rank_from"] <= before["rank_to"]:
            errors["rewards"] = ["Reward bands must be disjoint."]
            return []
    return ordered


def _reset(data: dict[str, Any], errors: Errors) -> str:
    value = data.get("reset")
    if value is None:
        return ""
    if not isinstance(value, str):
        errors["reset"] = ["A 5-field cron expression (UTC), or null."]
        return ""
    try:
        cron_check(value)
    except BadCron as exc:
        errors["reset"] = [str(exc)]
        return ""
    return " ".join(value.split())


def tournament_validate(data: Any) -> tuple[TournamentIn | None, Errors]:
    """The configuration, or the field errors (a 400). Window checks that need the clock or the
    stored tournament are the service's (`tournament_put`)."""
    if not isinstance(data, dict):
        return None, {"non_field_errors": ["The body must be a JSON object."]}
    errors: Errors = {name: ["Unknown field."] for name in data if name not in FIELDS}
    for name in ("title", "starts_at", "duration_s"):
        if data.get(name) is None:
            errors[name] = ["This field is required."]
    title = _text(data, "title", MAX_TITLE, errors, required=True) if "title" not in errors else ""
    config: dict[str, Any] = {
        "title": title,
        "description": _text(data, "description", MAX_DESCRIPTION, errors, required=False),
        "category": _int(data, "category", 0, 127, errors, default=0) or 0,
        "metadata": _json_object(data.get("metadata", {}), "metadata", errors),
        "scoring": _choice(data, "scoring", list(Scoring.values), Scoring.BEST, errors),
        "order": _choice(data, "order", list(Order.values), Order.DESC, errors),
        "starts_at": _time(data, "starts_at", errors) if "starts_at" not in errors else None,
        "ends_at": _time(data, "ends_at", errors),
        "duration_s": _int(data, "duration_s", MIN_DURATION_S, MAX_DURATION_S, errors, default=None),
        "reset": _reset(data, errors),
        "grace_s": _int(data, "grace_s", 0, MAX_GRACE_S, errors, default=DEFAULT_GRACE_S),
        "max_entrants": _int(data, "max_entrants", 1, MAX_LIMIT, errors, default=None),
        "max_attempts": _int(data, "max_attempts", 1, MAX_LIMIT, errors, default=None),
        "join_required": data.get("join_required", False),
        "rewards": _rewards(data.get("rewards", []), errors),
    }
    if not isinstance(config["join_required"], bool):
        errors["join_required"] = ["true or false."]
    if errors:
        return None, errors
    if not config["reset"] and config["ends_at"] is None:
        config["ends_at"] = config["starts_at"] + timedelta(seconds=config["duration_s"])
    return TournamentIn(**config), {}
