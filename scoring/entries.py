"""The ledger's side of results entering tournaments (docs/api.md, "Counting").

`matches_submit` (services.py) resolves the tournaments a match names (an unknown id is a 400),
has `competitions.entry.entries_decide` give each result its verdicts before the answer is built
(the counters decided in Lua), records them as `TournamentResult` rows in the same transaction as
the events, and gives the counters back when that transaction fails. The attempts a player used
are counted here from those rows (the ledger), to fill a counter Redis has lost.
"""

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Count

from boards.writer import CompetitionBoard, EventRow
from common.db import copy_rows
from competitions.boards import period_board
from competitions.entry import COUNTED, Entry, entrants_record, entries_decide, entries_undo
from competitions.models import Tournament
from competitions.periods import period_number
from competitions.services import schedule_of

from .models import EventStatus, TournamentResult


def attempts_counted(tournament: Tournament, period: int) -> dict[str, int]:
    """Each player's counted results in a period that are still accepted (a revoked one gave its
    attempt back)."""
    rows = (
        TournamentResult.objects.filter(
            tournament=tournament, period=period, verdict=COUNTED, event__status=EventStatus.ACCEPTED
        )
        .values("player_id")
        .annotate(n=Count("id"))
    )
    return {row["player_id"]: row["n"] for row in rows}


def entries_of_results(
    *, results: Iterable[tuple[str, bool]], played_at: datetime, tournaments: list[Tournament]
) -> list[list[Entry]]:
    """One list of entries per result (player id, accepted), one entry per named tournament."""
    return [[Entry(t, player_id, played_at, accepted) for t in tournaments] for player_id, accepted in results]


def entries_decide_all(*, entries: list[Entry], now: datetime) -> None:
    """Every entry's verdict (in place), the counters decided in Lua."""
    if entries:
        entries_decide(entries=entries, now=now, attempts_of=attempts_counted)


def entries_give_back(entries: list[Entry]) -> None:
    """After a transaction that did not commit: the attempts and seats its counted entries took."""
    entries_undo(entries=[e for e in entries if e.verdict == COUNTED])


def entries_record(*, rows: list[tuple[int, Entry]], now: datetime) -> None:
    """The verdicts as ledger rows (event id, entry), and the players the results entered; in the
    caller's transaction."""
    if not rows:
        return
    copy_rows(
        TournamentResult._meta.db_table,
        ["event_id", "tournament_id", "period", "player_id", "verdict"],
        ((event_id, e.tournament.pk, e.period, e.player_id, e.verdict) for event_id, e in rows),
        binary=True,
    )
    entrants_record(entries=[e for _, e in rows], now=now)


def competition_boards_of(rows: list[EventRow]) -> dict[CompetitionBoard, list[EventRow]]:
    """The tournament period boards these events counted on (their `counted` verdicts), each with
    its events: the worker applies them with the season boards, by the same script."""
    if not rows:
        return {}
    by_id = {row.id: row for row in rows}
    counted = TournamentResult.objects.filter(event_id__in=list(by_id), verdict=COUNTED).select_related(
        "tournament__game"
    )
    grouped: dict[tuple[int, int], list[TournamentResult]] = defaultdict(list)
    for result in counted:
        if result.period is not None:
            grouped[(result.tournament_id, result.period)].append(result)
    boards: dict[CompetitionBoard, list[EventRow]] = {}
    for results in grouped.values():
        tournament = results[0].tournament
        period = period_number(schedule_of(tournament), results[0].period or 0)
        board = period_board(tournament=tournament, period=period) if period is not None else None
        if board is not None:
            boards[board] = [by_id[r.event_id] for r in results]
    return boards
