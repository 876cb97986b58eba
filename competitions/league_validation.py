"""Strict validation of a league's configuration (the signed PUT), with DRF-shaped field errors:
"30" is not a cohort size, and an unknown field is refused (docs/api.md, "Leagues")."""

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from common.formats import parse_time

from .league_models import MAX_COHORT_SIZE, MAX_DIVISIONS, MIN_COHORT_SIZE, MIN_DIVISIONS, LeagueScoring
from .periods import BadCron, cron_check

MAX_TITLE = 200
FIELDS = ("title", "starts_at", "reset", "cohort_size", "scoring", "demote_idle", "divisions")
REQUIRED = ("title", "starts_at", "reset", "cohort_size", "divisions")
DIVISION_NAME_RE = re.compile(r"^[a-z0-9-]{1,32}$")

Errors = dict[str, list[str]]


@dataclass(frozen=True)
class LeagueIn:
    """A validated configuration, every field resolved (defaults filled in)."""

    title: str
    starts_at: datetime
    reset: str
    cohort_size: int
    scoring: str
    demote_idle: bool
    divisions: list[dict[str, Any]]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _division(i: int, value: Any, count: int, cohort_size: int | None) -> tuple[dict[str, Any] | None, str]:
    """One division, or why it is refused."""
    if not isinstance(value, dict) or set(value) != {"name", "promote", "demote"}:
        return None, f"Division {i}: an object {{name, promote, demote}}."
    name, promote, demote = value["name"], value["promote"], value["demote"]
    if not isinstance(name, str) or not DIVISION_NAME_RE.match(name):
        return None, f"Division {i}: a name of 1 to 32 of [a-z0-9-]."
    if not _is_int(promote) or not _is_int(demote) or promote < 0 or demote < 0:
        return None, f"Division {i}: promote and demote are integers from 0."
    if i == 0 and demote != 0:
        return None, "The lowest division demotes nobody: its demote must be 0."
    if i == count - 1 and promote != 0:
        return None, "The highest division promotes nobody: its promote must be 0."
    if cohort_size is not None and promote + demote > cohort_size:
        return None, f"Division {i}: promote + demote must be at most cohort_size ({cohort_size})."
    return {"name": name, "promote": promote, "demote": demote}, ""


def _divisions(value: Any, cohort_size: int | None, errors: Errors) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not MIN_DIVISIONS <= len(value) <= MAX_DIVISIONS:
        errors["divisions"] = [f"A list of {MIN_DIVISIONS} to {MAX_DIVISIONS} divisions, lowest first."]
        return []
    found: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        division, problem = _division(i, item, len(value), cohort_size)
        if division is None:
            errors["divisions"] = [problem]
            return []
        found.append(division)
    if len({d["name"] for d in found}) != len(found):
        errors["divisions"] = ["Division names must be distinct."]
        return []
    return found


def _fields(data: dict[str, Any], errors: Errors) -> dict[str, Any]:
    title = data.get("title")
    if not isinstance(title, str) or not title.strip() or len(title) > MAX_TITLE:
        errors["title"] = [f"A string of 1 to {MAX_TITLE} characters."]
    starts_at = parse_time(data["starts_at"]) if isinstance(data.get("starts_at"), str) else None
    if starts_at is None:
        errors["starts_at"] = ["An ISO 8601 time with a zone (2026-12-07T00:00:00Z)."]
    reset = data.get("reset")
    try:
        if not isinstance(reset, str):
            raise BadCron("A 5-field cron expression (UTC).")
        cron_check(reset)
    except BadCron as exc:
        errors["reset"] = [str(exc)]
    size: Any = data.get("cohort_size")
    if not _is_int(size) or not MIN_COHORT_SIZE <= size <= MAX_COHORT_SIZE:
        errors["cohort_size"] = [f"An integer from {MIN_COHORT_SIZE} to {MAX_COHORT_SIZE}."]
        size = None
    scoring = data.get("scoring", LeagueScoring.SUM.value)
    if not isinstance(scoring, str) or scoring not in LeagueScoring.values:
        errors["scoring"] = ["One of sum, best."]
    demote_idle = data.get("demote_idle", False)
    if not isinstance(demote_idle, bool):
        errors["demote_idle"] = ["true or false."]
    divisions = _divisions(data.get("divisions"), size, errors)
    return {
        "title": title,
        "starts_at": starts_at,
        "reset": " ".join(reset.split()) if isinstance(reset, str) else "",
        "cohort_size": size,
        "scoring": scoring,
        "demote_idle": demote_idle,
        "divisions": divisions,
    }


def league_validate(data: Any) -> tuple[LeagueIn | None, Errors]:
    """The configuration, or the field errors (a 400). Checks that need the clock or the stored
    league are the service's (`league_put`)."""
    if not isinstance(data, dict):
        return None, {"non_field_errors": ["The body must be a JSON object."]}
    errors: Errors = {name: ["Unknown field."] for name in data if name not in FIELDS}
    missing = {name: ["This field is required."] for name in REQUIRED if data.get(name) is None}
    config = _fields(data, errors)
    errors.update(missing)
    if errors:
        return None, errors
    return LeagueIn(**config), {}
