"""League reads that PostgreSQL answers: a league with its period and divisions (docs/api.md,
"Leagues"). The cohort reads are in league_reads.py."""

from dataclasses import asdict
from datetime import datetime
from typing import Any

from django.db.models import Count

from seasons.models import Game

from .league_models import League, LeagueMember, LeaguePeriod, LeaguePeriodState
from .league_periods import league_period_shown
from .league_services import league_config_of
from .periods import FINAL, GRACE, Period


def league_get(*, game: Game, slug: str) -> League | None:
    if len(slug) > 40:
        return None
    return League.objects.filter(game=game, slug=slug).select_related("game").first()


def league_period_final(league: League, index: int) -> bool:
    return LeaguePeriod.objects.filter(league=league, index=index, state=LeaguePeriodState.FINAL).exists()


def league_period_status(league: League, period: Period, now: datetime, final: bool | None = None) -> str:
    """The period's status by the clock, except that a period past its grace says `final` only once
    its end is done (until then `grace`)."""
    status = period.status_at(now)
    if status == FINAL and not (final if final is not None else league_period_final(league, period.index)):
        return GRACE
    return status


def league_period_view(league: League, period: Period, now: datetime) -> dict[str, Any]:
    return {
        "index": period.index,
        "starts_at": period.starts_at,
        "ends_at": period.ends_at,
        "status": league_period_status(league, period, now),
    }


def division_counts(league: League, index: int) -> dict[int, tuple[int, int]]:
    """Per division index: (players in a cohort this period, cohorts), from the committed rows."""
    rows = (
        LeagueMember.objects.filter(league=league, period=index)
        .values("division")
        .annotate(players=Count("id"), cohorts=Count("number", distinct=True))
    )
    return {row["division"]: (row["players"], row["cohorts"]) for row in rows}


def league_view(*, league: League, now: datetime) -> dict[str, Any]:
    """`<league>`: the id, the configuration, the period shown (the active one, else the next,
    else the last), and each division with its players and cohorts in that period."""
    view: dict[str, Any] = {"id": league.slug, **asdict(league_config_of(league))}
    period = league_period_shown(league, now)
    view["period"] = league_period_view(league, period, now) if period is not None else None
    counts = division_counts(league, period.index) if period is not None else {}
    view["divisions"] = [
        {**division, "players": counts.get(i, (0, 0))[0], "cohorts": counts.get(i, (0, 0))[1]}
        for i, division in enumerate(league.divisions)
    ]
    return view
