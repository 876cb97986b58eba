"""Reconciliation of the tournament periods that are not final (competitions/open_periods.py): each period's
board and counters compared with the ledger, drift repaired. Called by `boards_reconcile`
(reconcile.py), in its sample runs and its full ones alike.

A live period is compared whole (the ledger's counted players of a period, a board no larger than
its entrants): the memory is one period's player ids and scores at a time.
- The board: each player's score from the ledger (`entries.period_scores`: counted results still
  accepted, hidden or deleted players off) against the board (ZSCAN), ghosts included.
- The counters: each player's counted attempts (`entries.attempts_counted`) and the entrants
  (`TournamentEntrant`) against the attempts hash and the entrant set. Counters that lost their
  "filled" mark are filled from the database (what their next use would do); nothing to compare.

As for the season boards, what differs at first sight is looked at again, player by player, between
two fingerprints of their ledger rows in the period (results, verdicts, statuses, the outbox, the
entrant row, hidden): a player with a counted result not applied yet is skipped for the board (it
is on its way), one whose rows changed in between is left for the next run. The rest is drift.

Repairs: a board's players are rewritten from the ledger (`entries.period_players_rewrite`, with
their dedup markers); a counter's value is written only if it still holds what was seen
(`counters.counters_repair`). A counter is ahead of the ledger while a submission or a join that
took it has not committed yet (or a failed one has not given it back): a value seen ahead on both
looks is taken as drift, so a transaction that spans both looks may lose its count (a rare under-
count, found by the next run); a counter behind the ledger is always drift (nothing in flight makes
one).
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q

from boards.models import Player
from boards.writer import GamePaused
from common.redis import boards_client
from competitions.counters import CounterFix, Counters, counters_fill, counters_read, counters_repair
from competitions.keys import attempts_key, board_key, entrants_key
from competitions.models import Tournament, TournamentEntrant
from competitions.open_periods import periods_live
from competitions.periods import Period
from seasons.models import Game

from .entries import attempts_counted, period_players_rewrite, period_scores
from .ledger_partitions import played_between
from .models import EventStatus, TournamentResult

_Drift = tuple[str, str, int | None, int | None]  # key, player, live, ledger


@dataclass
class PeriodsReport:
    periods: int = 0  # live periods compared
    entries: int = 0  # (board or counter, player) pairs compared
    candidates: int = 0
    pending: int = 0
    moved: int = 0
    filled: int = 0  # counters filled from the database (they had lost their data)
    drift: list[_Drift] = field(default_factory=list)
    repaired: int = 0  # boards rewritten and counters repaired (one per period and kind)
    unrepaired: int = 0


@dataclass
class _Look:
    """One look at a period: the ledger's and Redis's values of each player."""

    scores: dict[str, int | None]
    board: dict[str, int]
    attempts: dict[str, int]
    counted: dict[str, int]
    entrants: set[str]
    entered: set[str]

    def apart(self) -> dict[str, set[str]]:
        """Per kind ("b" board, "a" attempts, "e" entrants), the players whose values differ."""
        return {
            "b": {p for p in set(self.scores) | set(self.board) if self.board.get(p) != self.scores.get(p)},
            "a": {p for p in set(self.attempts) | set(self.counted) if self.attempts.get(p) != self.counted.get(p)},
            "e": self.entrants ^ self.entered,
        }


def periods_reconcile(*, game: Game, now: datetime, repair: bool) -> PeriodsReport:
    """Compare the board and counters of each of the game's tournament periods not final with the
    ledger, and repair the drift unless `repair` is False (the module docstring)."""
    report = PeriodsReport()
    for tournament, period in periods_live(game_id=game.pk, now=now):
        report.periods += 1
        _period_reconcile(tournament, period, repair=repair, report=report)
    return report


def _period_reconcile(tournament: Tournament, period: Period, *, repair: bool, report: PeriodsReport) -> None:
    counters = counters_read(tournament=tournament, period=period)
    if not counters.filled:
        counters_fill(tournament=tournament, period=period)
        report.filled += 1
        counters = counters_read(tournament=tournament, period=period)
    first = _look(tournament, period, None, counters)
    apart = first.apart()
    report.entries += len(first.scores.keys() | first.board.keys()) + len(first.counted.keys() | first.attempts.keys())
    report.entries += len(first.entrants | first.entered)
    report.candidates += sum(len(players) for players in apart.values())
    players = sorted(set().union(*apart.values()))
    if not players:
        return
    before = _fingerprints(tournament, period, players)
    second = _look(tournament, period, players, counters_read(tournament=tournament, period=period, player_ids=players))
    after = _fingerprints(tournament, period, players)
    board: list[str] = []
    fixes: list[CounterFix] = []
    for player in players:
        if before[player] != after[player]:
            report.moved += 1
            continue
        _player_drift(tournament, period, player, first, second, before[player], board, fixes, report)
    if repair:
        _period_repair(tournament, period, board, fixes, report)


def _player_drift(
    tournament: Tournament,
    period: Period,
    player: str,
    first: _Look,
    second: _Look,
    fingerprint: "_Fingerprint",
    board: list[str],
    fixes: list[CounterFix],
    report: PeriodsReport,
) -> None:
    """One player's drift, confirmed by the second look (the same values seen twice)."""
    game, slug, index = tournament.game.slug, tournament.slug, period.index
    live, want = second.board.get(player), second.scores.get(player)
    if live != want and live == first.board.get(player):
        if fingerprint.pending:
            report.pending += 1
        else:
            board.append(player)
            report.drift.append((board_key(game, slug, index), player, live, want))
    seen, counted = second.attempts.get(player, 0), second.counted.get(player, 0)
    if seen != counted and seen == first.attempts.get(player, 0):
        fixes.append(("a", player, seen, counted))
        report.drift.append((attempts_key(game, slug, index), player, seen, counted))
    inside, entered = int(player in second.entrants), int(player in second.entered)
    if inside != entered and inside == int(player in first.entrants):
        fixes.append(("e", player, inside, entered))
        report.drift.append((entrants_key(game, slug, index), player, inside, entered))


def _period_repair(
    tournament: Tournament, period: Period, board: list[str], fixes: list[CounterFix], report: PeriodsReport
) -> None:
    if board:
        try:
            written = period_players_rewrite(tournament=tournament, period=period, player_ids=board)
        except GamePaused:
            written = None
        if written is None:  # a rebuild's swap: the next run
            report.unrepaired += len(board)
        else:
            report.repaired += 1
    if fixes:
        if counters_repair(tournament=tournament, period=period, fixes=fixes) >= 0:
            report.repaired += 1
        else:
            report.unrepaired += len({player for _, player, _, _ in fixes})


def _look(tournament: Tournament, period: Period, players: list[str] | None, counters: Counters) -> _Look:
    """The ledger's values and Redis's (of `players`, or of everyone)."""
    scores, _ = period_scores(tournament=tournament, period=period, player_ids=players)
    scores = {p: s for p, s in scores.items() if s is not None}
    counted = attempts_counted(tournament, period.index, played=played_between(period.starts_at, period.ends_at))
    entered = TournamentEntrant.objects.filter(tournament=tournament, period=period.index)
    if players is not None:
        counted = {p: n for p, n in counted.items() if p in players}
        entered = entered.filter(player_id__in=players)
    return _Look(
        scores,
        _board(tournament, period, players),
        counters.attempts,
        counted,
        counters.entrants,
        set(entered.values_list("player_id", flat=True)),
    )


def _board(tournament: Tournament, period: Period, players: list[str] | None) -> dict[str, int]:
    key = board_key(tournament.game.slug, tournament.slug, period.index)
    redis = boards_client()
    if players is None:
        return {str(member): int(score) for member, score in redis.zscan_iter(key, count=1000)}
    found = redis.zmscore(key, players)
    return {p: int(score) for p, score in zip(players, found, strict=True) if score is not None}


@dataclass(frozen=True)
class _Fingerprint:
    """A player's rows in a period (result, verdict, status, still unapplied), entrant row and
    visibility: equal before and after a look means nothing moved in between."""

    results: frozenset[tuple[int, str, str, bool]]
    entrant: bool
    hidden: bool

    @property
    def pending(self) -> bool:
        return any(status == EventStatus.ACCEPTED and unapplied for _, _, status, unapplied in self.results)


def _fingerprints(tournament: Tournament, period: Period, players: list[str]) -> dict[str, _Fingerprint]:
    results: dict[str, set[tuple[int, str, str, bool]]] = defaultdict(set)
    rows = TournamentResult.objects.filter(
        tournament=tournament,
        period=period.index,
        player_id__in=players,
        event__played_at__range=played_between(period.starts_at, period.ends_at),
    )
    for player, event_id, verdict, status, outbox_row in rows.values_list(
        "player_id", "event_id", "verdict", "event__status", "event__unapplied"
    ):
        results[player].add((event_id, verdict, status, outbox_row is not None))
    entrants = set(
        TournamentEntrant.objects.filter(tournament=tournament, period=period.index, player_id__in=players).values_list(
            "player_id", flat=True
        )
    )
    hidden = set(
        Player.objects.filter(game_id=tournament.game_id, player_id__in=players)
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .values_list("player_id", flat=True)
    )
    return {p: _Fingerprint(frozenset(results.get(p, ())), p in entrants, p in hidden) for p in players}
