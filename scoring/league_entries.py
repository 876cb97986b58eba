"""The ledger's side of results counting in leagues (docs/api.md, "Leagues").

`matches_submit` (services.py) has every accepted result played in an open period of one of the
game's leagues seated before the answer is built (`competitions.league_assign.seats_decide`: the
player's cohort looked up, or for their first result of the period decided in Lua), records the
cohort of each such result as a `LeagueResult` row and the new seats as `LeagueMember` rows in the
same transaction as the events, and gives the seats back when that transaction fails.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection

from boards.writer import CompetitionBoard, EventRow
from common.db import ID_ARRAY, copy_rows, id_list
from competitions.league_assign import Seat, members_record, seats_decide, seats_undo
from competitions.league_boards import cohort_boards_of_period
from competitions.league_models import League
from competitions.league_periods import league_period, league_period_holding
from competitions.periods import Period

from .league_models import LeagueResult


def leagues_of(*, game_id: int) -> list[League]:
    """The game's leagues (one query; none for most games)."""
    return list(League.objects.filter(game_id=game_id).select_related("game"))


@dataclass
class PeriodsFound:
    """What `seats_of_results` worked out for a caller that asks for many matches: each league's
    period last found (by pk), and the (league pk, played_at) pairs that no period holds (results
    played before a league's first period, or between two, would each work it out again)."""

    last: dict[int, Period] = field(default_factory=dict)
    outside: set[tuple[int, datetime]] = field(default_factory=set)


def seats_of_results(
    *,
    leagues: list[League],
    results: Iterable[tuple[str, bool]],
    played_at: datetime,
    now: datetime,
    found: PeriodsFound | None = None,
) -> list[list[Seat]]:
    """One list of seats per result (player id, accepted): one per league with an open period (its
    grace not over) holding `played_at`, for accepted results only. `found`: what earlier matches
    worked out, kept by a caller that asks for many: a league's periods do not overlap, so one
    that holds `played_at` is the one, and a time no period held holds none (working it out from
    the schedule was a fifth of a batch's league CPU on the web)."""
    periods = []
    for league in leagues:
        if league.created_at > now:
            continue
        period = found.last.get(league.pk) if found is not None else None
        if period is None or not period.contains(played_at):
            if found is not None and (league.pk, played_at) in found.outside:
                continue
            period = league_period_holding(league, played_at)
            if found is not None:
                if period is not None:
                    found.last[league.pk] = period
                else:
                    found.outside.add((league.pk, played_at))
        if period is not None and period.closes_at > now:
            periods.append((league, period))
    return [
        [Seat(league, period, player_id) for league, period in periods] if accepted else []
        for player_id, accepted in results
    ]


def league_seats_decide(*, seats: list[Seat]) -> None:
    """Every seat's cohort (in place), new ones decided in Lua."""
    if seats:
        seats_decide(seats=seats)


def league_seats_give_back(seats: list[Seat]) -> None:
    """After a transaction that did not commit: the seats it took."""
    seats_undo(seats=[s for s in seats if s.new])


def league_results_record(*, rows: list[tuple[int, Seat]], now: datetime) -> None:
    """Each result's cohort as a ledger row (event id, seat), and the players seated now; in the
    caller's transaction."""
    if not rows:
        return
    copy_rows(
        LeagueResult._meta.db_table,
        ["event_id", "league_id", "period", "player_id", "division", "number"],
        ((event_id, s.league.pk, s.period.index, s.player_id, s.division, s.number) for event_id, s in rows),
        binary=True,
    )
    members_record(seats=[s for _, s in rows], now=now)


def league_boards_of(rows: list[EventRow]) -> dict[CompetitionBoard, list[EventRow]]:
    """The cohort boards these events count on (their `LeagueResult` rows with a cohort), each with
    its events: the worker applies them with the season boards, by the same script. Plain tuples,
    not model instances, and each league period's facts once: a batch's results fall in as many
    cohorts as it has players (docs/performance.md, "Leagues")."""
    if not rows:
        return {}
    by_id = {row.id: row for row in rows}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT league_id, period, division, number, event_id FROM {LeagueResult._meta.db_table} "
            f"WHERE event_id = ANY({ID_ARRAY}) AND number IS NOT NULL",
            [id_list(by_id)],
        )
        found = cursor.fetchall()
    grouped: dict[tuple[int, int, int, int], list[EventRow]] = defaultdict(list)
    for league_id, index, division, number, event_id in found:
        grouped[(league_id, index, division or 0, number or 0)].append(by_id[event_id])
    if not grouped:
        return {}
    leagues = League.objects.select_related("game").in_bulk({key[0] for key in grouped})
    makers: dict[tuple[int, int], Callable[[int, int], CompetitionBoard] | None] = {}
    boards: dict[CompetitionBoard, list[EventRow]] = {}
    for (league_id, index, division, number), events in grouped.items():
        if (league_id, index) not in makers:
            league = leagues[league_id]
            period = league_period(league, index)
            makers[(league_id, index)] = (
                None if period is None else cohort_boards_of_period(league=league, period=period)
            )
        make = makers[(league_id, index)]
        if make is not None:
            boards[make(division, number)] = events
    return boards
