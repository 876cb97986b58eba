"""The ledger's side of results entering tournaments (docs/api.md, "Counting").

`matches_submit` (services.py) resolves the tournaments a match names (an unknown id is a 400),
has `competitions.entry.entries_decide` give each result its verdicts before the answer is built
(the counters decided in Lua), records them as `TournamentResult` rows in the same transaction as
the events, and gives the counters back when that transaction fails. The attempts a player used
are counted here from those rows (the ledger), to fill a counter Redis has lost.
"""

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q

from boards.models import Player
from boards.writer import CompetitionBoard, EventRow, GamePaused, competition_scores_write
from common.db import ID_ARRAY, copy_rows, id_list
from common.redis import boards_client
from competitions.boards import period_board
from competitions.counters import counters_fill
from competitions.entry import COUNTED, NOT_COUNTED, Entry, entrants_record, entries_decide, entries_undo
from competitions.models import Tournament
from competitions.open_periods import periods_live
from competitions.periods import Period, period_number
from competitions.scores import CountedResult, incremental, period_score
from competitions.services import schedule_of
from seasons.models import Game

from .ledger_partitions import played_between
from .models import EventStatus, ScoreEvent, TournamentResult


def attempts_counted(
    tournament: Tournament, period: int, *, played: tuple[datetime, datetime] | None = None
) -> dict[str, int]:
    """Each player's counted results in a period that are still accepted (a revoked one gave its
    attempt back); with `played` (ledger_partitions.played_between), from those months only."""
    counted = TournamentResult.objects.filter(
        tournament=tournament, period=period, verdict=COUNTED, event__status=EventStatus.ACCEPTED
    )
    if played is not None:
        counted = counted.filter(event__played_at__range=played)
    rows = counted.values("player_id").annotate(n=Count("id"))
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


@dataclass
class CompetitionWork:
    """What a batch of events does to the tournament boards: the boards the apply script adds them
    to (each with its events), and the periods whose boards are rewritten for their players."""

    added: dict[CompetitionBoard, list[EventRow]] = field(default_factory=dict)
    rewritten: list[tuple[Tournament, Period, list[EventRow]]] = field(default_factory=list)


def competition_boards_of(rows: list[EventRow]) -> CompetitionWork:
    """The tournament period boards these events counted on (their `counted` verdicts), each with
    its events: the worker applies `added` with the season boards, by the same script, and rewrites
    `rewritten` from the ledger (competitions/scores.py)."""
    work = CompetitionWork()
    if not rows:
        return work
    by_id = {row.id: row for row in rows}
    # Plain tuples, not model instances: a batch holds thousands of counted rows (measured: the
    # instances cost the worker 60 us an event, docs/performance.md "Tournaments").
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT tournament_id, period, event_id FROM {TournamentResult._meta.db_table} "
            f"WHERE event_id = ANY({ID_ARRAY}) AND verdict = %s AND period IS NOT NULL",
            [id_list(by_id), COUNTED],
        )
        counted = cursor.fetchall()
    grouped: dict[tuple[int, int], list[EventRow]] = defaultdict(list)
    for tournament_id, index, event_id in counted:
        grouped[(tournament_id, index or 0)].append(by_id[event_id])
    if not grouped:
        return work
    tournaments = Tournament.objects.select_related("game").in_bulk({t for t, _ in grouped})
    for (tournament_id, index), events in grouped.items():
        tournament = tournaments[tournament_id]
        period = period_number(schedule_of(tournament), index)
        if period is None:
            continue
        if incremental(tournament):
            work.added[period_board(tournament=tournament, period=period)] = events
        else:
            work.rewritten.append((tournament, period, events))
    return work


def competition_rewrites(work: CompetitionWork) -> set[int]:
    """Rewrite the `rewritten` boards for the players of their events; returns the events whose
    rewrite found the game paused (a rebuild), for the relay to send again."""
    paused: set[int] = set()
    for tournament, period, events in work.rewritten:
        players = sorted({e.player_id for e in events})
        if period_players_rewrite(tournament=tournament, period=period, player_ids=players) is None:
            paused.update(e.id for e in events)
    return paused


def _counted_results(
    tournament: Tournament, period: Period, player_ids: list[str] | None
) -> dict[str, list[CountedResult]]:
    """Each player's counted results in the period whose results are still accepted (None: every
    player's), from the period's months of the ledger."""
    rows = TournamentResult.objects.filter(
        tournament=tournament,
        period=period.index,
        verdict=COUNTED,
        event__status=EventStatus.ACCEPTED,
        event__played_at__range=played_between(period.starts_at, period.ends_at),
    )
    if player_ids is not None:
        rows = rows.filter(player_id__in=player_ids)
    found: dict[str, list[CountedResult]] = defaultdict(list)
    for player_id, event_id, points, played_at, accepted_at in rows.values_list(
        "player_id", "event_id", "event__points", "event__played_at", "event__accepted_at"
    ):
        found[player_id].append(CountedResult(event_id, points, played_at, accepted_at))
    return found


def period_scores(
    *, tournament: Tournament, period: Period, player_ids: list[str] | None
) -> tuple[dict[str, int | None], dict[str, list[CountedResult]]]:
    """What the ledger says of these players on the period's board (None: every player with a
    counted result): each one's encoded score (None: off the board, with no counted result still
    accepted, or hidden or deleted), and the counted results it holds."""
    board = period_board(tournament=tournament, period=period)
    results = _counted_results(tournament, period, player_ids)
    players = list(results) if player_ids is None else player_ids
    unseen = set(
        Player.objects.filter(game_id=tournament.game_id, player_id__in=players)
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .values_list("player_id", flat=True)
    )
    scores = {
        player_id: None
        if player_id in unseen
        else period_score(
            tournament=tournament,
            starts_at=board.starts_at,
            time_bits=board.time_bits,
            results=results.get(player_id, []),
        )
        for player_id in players
    }
    return scores, results


def _period_lock(tournament: Tournament, period: int, player_ids: list[str]) -> None:
    """Hold each player's rewrite lock on the period's board until the transaction ends (in a
    fixed order): one rewrite of a player's score at a time, each from the ledger as it is once
    the previous one has written."""
    with connection.cursor() as cursor:
        for player_id in sorted(player_ids):
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"t:{tournament.pk}:{period}:{player_id}"]
            )


def period_players_rewrite(
    *, tournament: Tournament, period: Period, player_ids: list[str], pause_held: bool = False
) -> int | None:
    """Rewrite these players' scores on the period's board from the ledger (their counted results
    still accepted; none, or hidden or deleted: off the board), as absolute values with the dedup
    markers of the results they include. Returns the number changed, None when the game is paused
    (unless the caller is the rebuild holding the pause: `pause_held`)."""
    board = period_board(tournament=tournament, period=period)
    with transaction.atomic():
        _period_lock(tournament, period.index, player_ids)
        scores, results = period_scores(tournament=tournament, period=period, player_ids=player_ids)
        included = {p: [(r.event_id, r.accepted_at) for r in found] for p, found in results.items()}
        return competition_scores_write(
            board=board,
            scores=scores,
            included=included,
            dedup_ttl_s=settings.SCORING_DEDUP_TTL_S,
            pause_held=pause_held,
        )


def _rewrite_retrying(tournament: Tournament, period: Period, player_ids: list[str], tries: int = 50) -> None:
    """`period_players_rewrite`, waiting out a rebuild's swap (it takes a moment)."""
    for _ in range(tries):
        if period_players_rewrite(tournament=tournament, period=period, player_ids=player_ids) is not None:
            return
        time.sleep(0.2)
    raise GamePaused(tournament.game.slug)


def tournament_player_correct(*, game: Game, player_id: str, now: datetime) -> int:
    """A player hidden, shown again or deleted: their score on each board of the game's periods not
    final that they have counted results in, rewritten from the ledger (off the board while hidden
    or deleted, so out of every rank; back when shown). Final periods are read from PostgreSQL.
    Raises GamePaused while a rebuild swaps the game's keys. Returns the number changed."""
    live = {(t.pk, period.index): (t, period) for t, period in periods_live(game_id=game.pk, now=now)}
    if not live:
        return 0
    counted = {
        (tournament_id, index or 0)
        for tournament_id, index in TournamentResult.objects.filter(
            tournament__game=game, player_id=player_id, verdict=COUNTED, period__isnull=False
        ).values_list("tournament_id", "period")
    }
    changed = 0
    for found in sorted(counted & set(live)):
        tournament, period = live[found]
        written = period_players_rewrite(tournament=tournament, period=period, player_ids=[player_id])
        if written is None:
            raise GamePaused(game.slug)
        changed += written
    return changed


def tournament_results_withdrawn(*, event_ids: list[int], now: datetime) -> None:
    """After the commit that took these results out of `accepted` (revoked, withheld for review,
    refused for overflow): in each period not final yet, the attempts their counted entries took
    are given back and the players' scores rewritten from what remains, as if they had never
    counted. (Their `counted` rows stay in the ledger: a result counts while it is accepted.)"""
    rows = list(
        TournamentResult.objects.filter(event_id__in=event_ids, verdict=COUNTED, period__isnull=False).select_related(
            "tournament__game", "event"
        )
    )
    grouped: dict[tuple[int, int], list[TournamentResult]] = defaultdict(list)
    for row in rows:
        grouped[(row.tournament_id, row.period or 0)].append(row)
    for (_, index), results in sorted(grouped.items()):
        tournament = results[0].tournament
        period = period_number(schedule_of(tournament), index)
        if period is None or period.closes_at <= now:
            continue  # a final period never changes
        entries_undo(
            entries=[
                Entry(tournament, r.player_id, r.event.played_at, False, period=index, verdict=COUNTED) for r in results
            ]
        )
        _rewrite_retrying(tournament, period, sorted({r.player_id for r in results}))


def tournament_results_approved(*, events: list[ScoreEvent], now: datetime) -> Callable[[], None]:
    """In the transaction that approves these pending results, before their status changes: their
    entries that did not count (`not_counted` when they were pending, or `counted` before they were
    withheld) are decided again as accepted results (the contract's order; `outside_period` once
    the period is final), and their rows say so. Returns the undo of the counters taken, for a
    transaction that does not commit. The worker then applies the counted ones."""
    played = {e.id: e.played_at for e in events}
    rows = list(
        TournamentResult.objects.filter(event_id__in=list(played), verdict__in=[NOT_COUNTED, COUNTED]).select_related(
            "tournament__game"
        )
    )
    if not rows:
        return lambda: None
    entries = [Entry(r.tournament, r.player_id, played[r.event_id], True) for r in rows]
    undo = entries_decide(entries=entries, now=now, attempts_of=attempts_counted)
    for row, entry in zip(rows, entries, strict=True):
        row.verdict, row.period = entry.verdict, entry.period
    TournamentResult.objects.bulk_update(rows, ["verdict", "period"])
    entrants_record(entries=entries, now=now)
    return undo


def tournament_boards_rebuild(*, game: Game, now: datetime) -> int:
    """Every board of the game's tournament periods whose grace has not ended, rewritten from the
    ledger: each player with a counted result there, and each player on the board, gets the score
    of their counted results still accepted (results not applied yet included, their markers set).
    The periods' counters (entrants, attempts) are filled from the database when Redis lost them
    (`counters_fill`: nothing is written to counters still filled). Called by the rebuild inside its
    pause (nothing is applied meanwhile), after the swap that took the unapplied results out of the
    outbox. Returns the number of players whose score changed."""
    changed = 0
    for tournament, period in periods_live(game_id=game.pk, now=now):
        found = set(
            TournamentResult.objects.filter(tournament=tournament, period=period.index, verdict=COUNTED).values_list(
                "player_id", flat=True
            )
        )
        on_board = boards_client().zrange(period_board(tournament=tournament, period=period).key, 0, -1)
        ids = sorted(found | {str(member) for member in on_board})
        if ids:
            written = period_players_rewrite(tournament=tournament, period=period, player_ids=ids, pause_held=True)
            changed += written or 0
        counters_fill(tournament=tournament, period=period)
    return changed
