"""Tournament reads that PostgreSQL answers: a tournament, a game's list, a tournament's periods
(docs/api.md, "Tournaments"). The boards' reads (top, player, around) are in boards.py."""

from dataclasses import asdict
from datetime import datetime
from typing import Any

from django.db.models import Count

from seasons.models import Game

from .models import Tournament, TournamentEntrant, TournamentPeriod
from .periods import FINAL, GRACE, Period, period_holding, period_next, period_shown, period_to_enter, periods_started
from .services import config_of, schedule_of

MAX_PERIODS_LISTED = 1000
ACTIVE, UPCOMING, ENDED = "active", "upcoming", "ended"


def tournament_get(*, game: Game, slug: str) -> Tournament | None:
    return Tournament.objects.filter(game=game, slug=slug).select_related("game").first()


def finals_of(tournament: Tournament, indexes: list[int]) -> set[int]:
    """Which of these periods are final (their standings frozen)."""
    found = TournamentPeriod.objects.filter(tournament=tournament, index__in=indexes)
    return set(found.values_list("index", flat=True))


def period_status(tournament: Tournament, period: Period, now: datetime, finals: set[int] | None = None) -> str:
    """The period's status: by the clock, except that a period whose grace is over says `final`
    only once its standings are frozen (until then `grace`)."""
    status = period.status_at(now)
    if status == FINAL:
        frozen = finals if finals is not None else finals_of(tournament, [period.index])
        if period.index not in frozen:
            return GRACE
    return status


def entrants_of(tournament: Tournament, indexes: list[int]) -> dict[int, int]:
    rows = (
        TournamentEntrant.objects.filter(tournament=tournament, period__in=indexes)
        .values("period")
        .annotate(n=Count("id"))
    )
    return {row["period"]: row["n"] for row in rows}


def period_view(
    tournament: Tournament, period: Period, now: datetime, entrants: int | None = None, finals: set[int] | None = None
) -> dict[str, Any]:
    if entrants is None:
        entrants = entrants_of(tournament, [period.index]).get(period.index, 0)
    return {
        "index": period.index,
        "starts_at": period.starts_at,
        "ends_at": period.ends_at,
        "status": period_status(tournament, period, now, finals),
        "entrants": entrants,
    }


def tournament_view(*, tournament: Tournament, now: datetime) -> dict[str, Any]:
    """`<tournament>`: the id, the configuration, the period shown (the active one, else the next,
    else the last), when the next one starts, and whether a player can enter now."""
    schedule = schedule_of(tournament)
    shown = period_shown(schedule, now)
    nxt = period_next(schedule, now)
    entering = period_to_enter(schedule, now)
    view: dict[str, Any] = {"id": tournament.slug, **asdict(config_of(tournament))}
    view["reset"] = tournament.reset or None
    view["period"] = period_view(tournament, shown, now) if shown is not None else None
    view["next_period_starts_at"] = nxt.starts_at if nxt is not None else None
    can_enter = entering is not None
    if can_enter and entering is not None and tournament.max_entrants is not None:
        taken = entrants_of(tournament, [entering.index]).get(entering.index, 0)
        can_enter = taken < tournament.max_entrants
    view["can_enter"] = can_enter
    return view


def tournament_state(tournament: Tournament, now: datetime) -> tuple[str, datetime]:
    """(active, upcoming or ended, the moment it is sorted by)."""
    schedule = schedule_of(tournament)
    active = period_holding(schedule, now)
    if active is not None:
        return ACTIVE, active.ends_at
    nxt = period_next(schedule, now)
    if nxt is not None:
        return UPCOMING, nxt.starts_at
    last = period_shown(schedule, now)
    return ENDED, last.ends_at if last is not None else tournament.starts_at


def tournaments_list(*, game: Game, now: datetime, status: str | None, category: int | None) -> list[dict[str, Any]]:
    """The game's tournaments: active ones first by their period's end (soonest first), then
    upcoming by their next start, then ended, latest end first."""
    found = Tournament.objects.filter(game=game).select_related("game")
    if category is not None:
        found = found.filter(category=category)
    rows = []
    for tournament in found:
        state, moment = tournament_state(tournament, now)
        if status is None or status == state:
            rows.append((state, moment, tournament))
    order = {ACTIVE: 0, UPCOMING: 1, ENDED: 2}
    rows.sort(key=lambda r: (order[r[0]], -r[1].timestamp() if r[0] == ENDED else r[1].timestamp(), r[2].slug))
    return [tournament_view(tournament=t, now=now) for _, _, t in rows]


def periods_list(*, tournament: Tournament, now: datetime) -> list[dict[str, Any]]:
    """Every period that has started (and the next one when it is upcoming), newest first."""
    periods = list(periods_started(schedule_of(tournament), now))[-MAX_PERIODS_LISTED:]
    periods.reverse()
    indexes = [p.index for p in periods]
    counts = entrants_of(tournament, indexes)
    finals = finals_of(tournament, indexes)
    return [period_view(tournament, p, now, counts.get(p.index, 0), finals) for p in periods]
