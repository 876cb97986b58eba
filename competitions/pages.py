"""A tournament's page (`/games/{game}/tournaments/{tournament_id}/[?period=K]`): the period's board
(its top 100 with rank, name, score, attempts and reward), the tournament's title and
description, the period's index and status and the time left, all in the HTML before any script
runs; the page's script (static/competitions/tournament.js) keeps it live over the WebSocket
(consumers.py) and counts the time down.

The board is read as the top read reads it (tops.py), so the page shows what the REST read shows.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.utils.html import format_html

from common.formats import iso

from .models import Tournament
from .periods import ACTIVE, FINAL, GRACE, UPCOMING, Period, period_number
from .standings import StandingView, UnknownPeriod, period_of
from .tops import standing_top

TOP_N = 100


@dataclass(frozen=True)
class TournamentPage:
    tournament: Tournament
    view: StandingView
    entries: list[dict[str, Any]]
    named: bool  # the address named the period (?period=): the page stays on it
    previous: int | None  # the periods before and after, when there are such
    following: int | None
    time_left: str

    @property
    def period(self) -> Period:
        return self.view.period

    @property
    def top_n(self) -> int:
        return TOP_N

    def window_html(self) -> str:
        """The period's window, in UTC."""
        period = self.view.period
        return format_html(
            '<time datetime="{}">{}</time> &ndash; <time datetime="{}">{}</time> UTC',
            iso(period.starts_at),
            f"{period.starts_at:%Y-%m-%d %H:%M}",
            iso(period.ends_at),
            f"{period.ends_at:%Y-%m-%d %H:%M}",
        )

    def rows(self) -> list[dict[str, Any]]:
        """The entries as the rows show them (the reward as text)."""
        return [{**entry, "reward_text": reward_text(entry["reward"])} for entry in self.entries]

    def page_json(self) -> str:
        """The page's data for its script (`lb-tournament`), escaped for a <script> element."""
        period = self.view.period
        data = {
            "game": self.tournament.game.slug,
            "tournament": self.tournament.slug,
            "period": period.index,
            "named": self.named,
            "status": self.view.status,
            "starts_at": iso(period.starts_at),
            "ends_at": iso(period.ends_at),
            "closes_at": iso(period.closes_at),
            "entries": self.entries,
        }
        return orjson.dumps(data).decode().translate(_SCRIPT_SAFE)


_SCRIPT_SAFE = str.maketrans({"<": "\\u003C", ">": "\\u003E", "&": "\\u0026"})


def tournament_page(*, tournament: Tournament, index: int | None, now: datetime) -> TournamentPage:
    """The page's data for period `index` (None: the one reads default to). Raises
    standings.UnknownPeriod for a period that is not there."""
    view, entries = standing_top(tournament=tournament, index=index, n=TOP_N, now=now)
    period = view.period
    try:
        after: int | None = period_of(view.conf, period.index + 1, now).index
    except UnknownPeriod:
        after = None
    before = period.index - 1 if period.index > 1 and period_number(view.conf.schedule, period.index - 1) else None
    return TournamentPage(
        tournament=tournament,
        view=view,
        entries=entries,
        named=index is not None,
        previous=before,
        following=after,
        time_left=time_left(view.status, period, now),
    )


def time_left(status: str, period: Period, now: datetime) -> str:
    """What the page says of the clock (the script says the same as it counts down)."""
    if status == UPCOMING:
        return f"Starts in {duration_text((period.starts_at - now).total_seconds())}"
    if status == ACTIVE:
        return f"{duration_text((period.ends_at - now).total_seconds())} left"
    if status == GRACE:
        closing = (period.closes_at - now).total_seconds()
        if closing > 0:
            return f"Ended; results played in time still count for {duration_text(closing)}"
        return "Ended; final standings soon"
    assert status == FINAL
    return "Final"


def duration_text(seconds: float) -> str:
    """`2 d 3 h`, `3 h 05 min`, `4 min 09 s`, `12 s`: the two largest units."""
    left = max(0, int(seconds))
    days, rest = divmod(left, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def reward_text(reward: Any) -> str:
    """A reward as a row shows it: `gems 500, title champion` for a flat object, else its JSON."""
    if reward is None:
        return ""
    if isinstance(reward, dict) and all(not isinstance(v, dict | list) for v in reward.values()):
        return ", ".join(f"{name} {value}" for name, value in reward.items())
    return orjson.dumps(reward).decode()
