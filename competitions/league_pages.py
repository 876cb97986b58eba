"""A league's page for one player (`/games/{game}/leagues/{league_id}/?player=`): their division
and their cohort (rank, name, score, zone of each member, the promotion and demotion lines drawn
between the zones), how far they are from the promotion line, and the time left in the period,
all in the HTML before any script runs; the page's script (static/competitions/league.js) keeps
the cohort live over its WebSocket (consumers.py `LeagueCohortConsumer`) and counts the time down.

The player and their cohort are read as the player read reads them (league_reads.py), so the page
shows what the REST read shows. Without `?player=` the page asks for a player id.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from common.formats import iso

from .league_models import League
from .league_periods import league_period_shown
from .league_reads import player_view
from .league_standings import DEMOTE, PROMOTE
from .pages import time_left
from .periods import Period

_SCRIPT_SAFE = str.maketrans({"<": "\\u003C", ">": "\\u003E", "&": "\\u0026"})


@dataclass(frozen=True)
class LeaguePage:
    league: League
    player_id: str
    view: dict[str, Any]  # the player read's answer
    period: Period | None
    time_left: str

    @property
    def cohort(self) -> dict[str, Any] | None:
        cohort: dict[str, Any] | None = self.view["cohort"]
        return cohort

    @property
    def entries(self) -> list[dict[str, Any]]:
        return self.cohort["entries"] if self.cohort is not None else []

    @property
    def status(self) -> str:
        period = self.view["period"]
        return str(period["status"]) if period is not None else ""

    def rows(self) -> list[dict[str, Any]]:
        """The entries with what the rows show besides: the player's own row, and the lines (the
        last promoted row and the first demoted one carry them)."""
        rows = []
        entries = self.entries
        for i, entry in enumerate(entries):
            after = entries[i + 1]["zone"] if i + 1 < len(entries) else None
            before = entries[i - 1]["zone"] if i > 0 else None
            lines = []
            if entry["zone"] == PROMOTE and after != PROMOTE:
                lines.append("promote-line")
            if entry["zone"] == DEMOTE and before != DEMOTE:
                lines.append("demote-line")
            rows.append({**entry, "me": entry["player_id"] == self.player_id, "lines": " ".join(lines)})
        return rows

    def standing_text(self) -> str:
        """Where the player stands against the promotion line (the script says the same)."""
        return standing_text(self.player_id, self.view["division"], self.entries, self.cohort is not None)

    def page_json(self) -> str:
        """The page's data for its script (`lb-league`), escaped for a <script> element."""
        period = self.period
        data = {
            "game": self.league.game.slug,
            "league": self.league.slug,
            "player": self.player_id,
            "division": self.view["division"],
            "cohort": self.cohort["id"] if self.cohort is not None else None,
            "status": self.status,
            "starts_at": iso(period.starts_at) if period is not None else None,
            "ends_at": iso(period.ends_at) if period is not None else None,
            "closes_at": iso(period.closes_at) if period is not None else None,
            "entries": self.entries,
        }
        return orjson.dumps(data).decode().translate(_SCRIPT_SAFE)


def standing_text(player_id: str, division: str, entries: list[dict[str, Any]], seated: bool) -> str:
    """`In the promotion zone`, `12 points to the promotion line` (to pass the last promoted
    player's score: a tie stays behind who reached it first), or why there is no line."""
    if not seated:
        return f"No result this period yet: a first result puts you in a {division} cohort."
    mine = next((e for e in entries if e["player_id"] == player_id), None)
    promoted = [e for e in entries if e["zone"] == PROMOTE]
    if mine is None:
        return "Your first result is on its way to the cohort."
    if mine["zone"] == PROMOTE:
        return "In the promotion zone."
    if not promoted:
        return "Nobody moves up from this cohort as it stands."
    gap = promoted[-1]["score"] - mine["score"] + 1
    return f"{gap} point{'s' if gap != 1 else ''} to the promotion line."


def league_page(*, league: League, player_id: str, now: datetime) -> LeaguePage:
    """The page's data for the player (a valid player id: the view checks it)."""
    view = player_view(league=league, player_id=player_id, now=now)
    period = league_period_shown(league, now)
    left = time_left(view["period"]["status"], period, now) if period is not None else ""
    return LeaguePage(league=league, player_id=player_id, view=view, period=period, time_left=left)
