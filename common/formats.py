"""Formats of the external contract (docs/api.md): ids, regions, times."""

import re
from datetime import UTC, datetime

PLAYER_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
REGION_RE = re.compile(r"^[a-z0-9-]{2,16}$")
GAME_SLUG_RE = re.compile(r"^[a-z0-9-]{1,40}$")


def parse_time(raw: object) -> datetime | None:
    """An ISO 8601 time with a zone, in UTC; None for anything else."""
    if not isinstance(raw, str) or len(raw) > 40 or "T" not in raw:
        return None
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(UTC)


def iso(moment: datetime) -> str:
    """`2026-10-13T20:14:07Z`: every time the API shows."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
