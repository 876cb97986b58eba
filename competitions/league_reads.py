"""League cohort reads (docs/api.md, "Leagues"): a cohort, a player's cohort, a player's history.

A cohort of a period that is not final is read from its board in Redis (league_boards.py): every
member in the tie rule's display order (score, then who reached it first, then player id), ranked
by the game's tie rule, hidden and deleted players left out; its zones follow from the number of
players shown, n: the first floor(promote x n / cohort_size) `promote`, the last
floor(demote x n / cohort_size) `demote`, the rest `stay`. A frozen cohort is read from its
standings in PostgreSQL, zones as its end decided them.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from boards.gone import gone_players
from boards.models import Player

from .league_boards import cohort_id, cohort_id_parse
from .league_models import League, LeagueCohort, LeagueMember, LeaguePlayer, LeagueStanding
from .league_periods import league_period, league_period_shown
from .league_selectors import league_period_view
from .league_standings import DEMOTE, PROMOTE, STAY, cohort_select, conf_current
from .periods import Period

ZONE_OF_OUTCOME = {"promoted": PROMOTE, "stayed": STAY, "demoted": DEMOTE}


@dataclass(frozen=True)
class CohortRef:
    league: League
    period: Period
    division: int
    number: int

    @property
    def id(self) -> str:
        return cohort_id(
            period=self.period.index, division_name=self.league.divisions[self.division]["name"], number=self.number
        )


def _names(game_id: int, player_ids: list[str]) -> dict[str, str]:
    found = Player.objects.filter(game_id=game_id, player_id__in=player_ids, display_name__isnull=False)
    return {player_id: name for player_id, name in found.values_list("player_id", "display_name") if name}


def _live_entries(ref: CohortRef) -> list[dict[str, Any]]:
    """The cohort's board as both entrances read it (league_standings.py)."""
    return cohort_select(conf_current(ref.league), ref.period, (ref.division, ref.number))


def _final_entries(ref: CohortRef) -> list[dict[str, Any]]:
    rows = list(
        LeagueStanding.objects.filter(
            cohort__league=ref.league,
            cohort__period=ref.period.index,
            cohort__division=ref.division,
            cohort__number=ref.number,
        )
        .exclude(player_id__in=gone_players(game_id=ref.league.game_id).values("player_id"))
        .order_by("position")
        .values_list("rank", "player_id", "score", "outcome")
    )
    names = _names(ref.league.game_id, [r[1] for r in rows])
    return [
        {"rank": rank, "player_id": p, "display_name": names.get(p), "score": score, "zone": ZONE_OF_OUTCOME[outcome]}
        for rank, p, score, outcome in rows
    ]


def cohort_view(ref: CohortRef, now: datetime) -> dict[str, Any]:
    """The cohort: its id, league, period, division, whether it is final, and its entries."""
    final = LeagueCohort.objects.filter(
        league=ref.league, period=ref.period.index, division=ref.division, number=ref.number, final_at__isnull=False
    ).exists()
    return {
        "id": ref.id,
        "league": ref.league.slug,
        "period": league_period_view(ref.league, ref.period, now),
        "division": ref.league.divisions[ref.division]["name"],
        "final": final,
        "entries": _final_entries(ref) if final else _live_entries(ref),
    }


def cohort_find(*, league: League, text: str) -> CohortRef | None:
    """The cohort a public id names, if the league has it (a member, or a frozen row)."""
    parsed = cohort_id_parse(text)
    if parsed is None:
        return None
    index, name, number = parsed
    names = league.division_names
    if name not in names:
        return None
    period = league_period(league, index)
    if period is None:
        return None
    division = names.index(name)
    exists = LeagueMember.objects.filter(league=league, period=index, division=division, number=number).exists()
    if not exists:
        exists = LeagueCohort.objects.filter(league=league, period=index, division=division, number=number).exists()
    return CohortRef(league, period, division, number) if exists else None


def player_view(*, league: League, player_id: str, now: datetime) -> dict[str, Any]:
    """The player in the period shown: their division and their cohort (null when they have no
    result in it; a player never seen is in the lowest division)."""
    period = league_period_shown(league, now)
    seat = None
    if period is not None:
        seat = (
            LeagueMember.objects.filter(league=league, period=period.index, player_id=player_id)
            .values_list("division", "number")
            .first()
        )
    if seat is not None and period is not None:
        division = seat[0]
        cohort: dict[str, Any] | None = cohort_view(CohortRef(league, period, seat[0], seat[1]), now)
    else:
        row = LeaguePlayer.objects.filter(league=league, player_id=player_id).values_list("division", flat=True).first()
        division, cohort = int(row or 0), None
    return {
        "player_id": player_id,
        "division": league.divisions[division]["name"],
        "period": league_period_view(league, period, now) if period is not None else None,
        "cohort": cohort,
    }


def history_view(*, league: League, player_id: str) -> dict[str, Any]:
    """The player's final periods, newest first."""
    rows = (
        LeagueStanding.objects.filter(league=league, player_id=player_id).select_related("cohort").order_by("-period")
    )
    names = league.division_names
    return {
        "periods": [
            {
                "index": r.period,
                "division": names[r.cohort.division],
                "cohort": cohort_id(period=r.period, division_name=names[r.cohort.division], number=r.cohort.number),
                "rank": r.rank,
                "score": r.score,
                "outcome": r.outcome,
            }
            for r in rows
        ]
    }
