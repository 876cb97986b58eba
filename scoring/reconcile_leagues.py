"""Reconciliation of the league periods whose grace has not ended: each period's assignment state
and cohort boards compared with the ledger, drift repaired. Called by `boards_reconcile`
(reconcile.py) beside the tournament periods (reconcile_periods.py), whose way it follows.

- The assignment state (competitions/league_keys.py): a state that lost its "filled" mark is
  filled from `LeagueMember` (what its next use would do). Else each stored seat is looked up in
  the player map, and each cohort's size and each division's open cohort in the counters. Redis
  behind the ledger (a stored seat missing from the map, a counter below the seats stored) is
  drift, repaired by raising it (`competitions.league_assign.state_raise`: only seats and counters that are
  missing or lower are written, so a seat taken by a submission not committed yet is never taken
  away, and no cohort can be given more than `cohort_size`). Redis ahead of the ledger is what a
  submission in flight looks like: it is not drift.
- Each cohort board: each player's score from the ledger (`league_corrections.cohort_scores`)
  against the board, ghosts included; what differs is looked at again between two fingerprints of
  the player's rows in the period (results, statuses, the outbox, hidden): a player with a result
  not applied yet is skipped (on its way), one whose rows changed meanwhile is left for the next
  run. The rest is drift, rewritten from the ledger (`cohort_players_rewrite`).
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Max, Q

from boards.models import Player
from boards.writer import GamePaused
from common.redis import boards_client
from competitions import league_keys as keys
from competitions.league_assign import state_fill, state_raise
from competitions.league_models import League, LeagueMember
from competitions.periods import Period
from competitions.scores import counted_score
from seasons.models import Game

from .league_corrections import Cohort, board_of, cohort_players_rewrite, cohort_results, cohort_scores
from .league_corrections import league_periods_live as live_periods
from .league_models import LeagueResult
from .ledger_partitions import played_between
from .models import EventStatus
from .reconcile_periods import PeriodsReport

BOARDS_CHUNK = 500  # cohort boards read in one pipeline


def leagues_reconcile(*, game: Game, now: datetime, repair: bool) -> PeriodsReport:
    """Compare the assignment state and cohort boards of each of the game's league periods whose
    grace has not ended with the ledger, and repair the drift unless `repair` is False."""
    report = PeriodsReport()
    for live in live_periods(game_id=game.pk, now=now):
        report.periods += 1
        _state_reconcile(live.league, live.period, repair=repair, report=report)
        for cohort, first in sorted(_first_looks(live.league, live.period).items()):
            _cohort_reconcile(live.league, live.period, cohort, first, repair=repair, report=report)
    return report


def _first_looks(league: League, period: Period) -> dict[Cohort, "_BoardLook"]:
    """The first look at every cohort of the period: the ledger's scores from one query, the boards
    read in pipelined chunks (a league of a million players has 33,000 cohorts)."""
    results = cohort_results(league=league, period=period)
    cohorts = sorted(set(results) | _seated_cohorts(league, period.index))
    gone = set(
        Player.objects.filter(game_id=league.game_id)
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .values_list("player_id", flat=True)
    )
    looks: dict[Cohort, _BoardLook] = {}
    redis = boards_client()
    for start in range(0, len(cohorts), BOARDS_CHUNK):
        chunk = cohorts[start : start + BOARDS_CHUNK]
        boards = [board_of(league, period, cohort) for cohort in chunk]
        pipe = redis.pipeline(transaction=False)
        for board in boards:
            pipe.zrange(board.key, 0, -1, withscores=True)
        for cohort, board, members in zip(chunk, boards, pipe.execute(), strict=True):
            scores: dict[str, int | None] = {}
            for player, found in results.get(cohort, {}).items():
                if player not in gone:
                    scores[player] = counted_score(
                        scoring=league.scoring,
                        ascending=False,
                        starts_at=board.starts_at,
                        time_bits=board.time_bits,
                        results=found,
                    )
            looks[cohort] = _BoardLook(
                {p: v for p, v in scores.items() if v is not None}, {str(m): int(v) for m, v in members}
            )
    return looks


def _seated_cohorts(league: League, index: int) -> set[Cohort]:
    rows = LeagueMember.objects.filter(league=league, period=index).values_list("division", "number").distinct()
    return {(int(d), int(n)) for d, n in rows}


@dataclass
class _StateLook:
    """The state in Redis and the seats stored."""

    seats: dict[str, str]  # stored: player -> "D:N"
    sizes: dict[str, int]  # stored: "D:N" -> players
    opens: dict[str, int]  # stored: "D" -> the highest cohort number
    players: dict[str, int]  # stored: "D" -> players seated
    redis_seats: dict[str, str]
    redis_counters: dict[str, str]

    def behind(self) -> tuple[dict[str, str], dict[str, int]]:
        """Seats missing (or other) in Redis's map, and counters below the stored seats."""
        seats = {p: s for p, s in self.seats.items() if self.redis_seats.get(p) != s}
        counters: dict[str, int] = {}
        for seat, size in self.sizes.items():
            if int(self.redis_counters.get(f"c:{seat}", 0)) < size:
                counters[f"c:{seat}"] = size
        for division, number in self.opens.items():
            if int(self.redis_counters.get(f"o:{division}", 0)) < number:
                counters[f"o:{division}"] = number
        for division, players in self.players.items():
            if int(self.redis_counters.get(f"p:{division}", 0)) < players:
                counters[f"p:{division}"] = players
        return seats, counters


def _state_look(league: League, index: int) -> _StateLook:
    game, slug = league.game.slug, league.slug
    redis = boards_client()
    counters = {str(k): str(v) for k, v in redis.hgetall(keys.state_key(game, slug, index)).items()}
    # The map holds every player of the period (a million in a large league): scanned, never one HGETALL.
    members = {str(k): str(v) for k, v in redis.hscan_iter(keys.members_key(game, slug, index), count=5000)}
    rows = LeagueMember.objects.filter(league=league, period=index)
    seats = {p: f"{d}:{n}" for p, d, n in rows.values_list("player_id", "division", "number")}
    sizes = {
        f"{row['division']}:{row['number']}": row["n"]
        for row in rows.values("division", "number").annotate(n=Count("id")).order_by()
    }
    by_division = rows.values("division").annotate(top=Max("number"), n=Count("id")).order_by()
    opens = {str(row["division"]): row["top"] for row in by_division}
    players = {str(row["division"]): row["n"] for row in by_division}
    return _StateLook(seats, sizes, opens, players, members, counters)


def _state_reconcile(league: League, period: Period, *, repair: bool, report: PeriodsReport) -> None:
    game, slug, index = league.game.slug, league.slug, period.index
    if not boards_client().hexists(keys.state_key(game, slug, index), ""):
        state_fill(league=league, period=period)
        report.filled += 1
        return
    first = _state_look(league, index)
    report.entries += len(first.seats) + len(first.sizes)
    seats, counters = first.behind()
    if not seats and not counters:
        return
    report.candidates += len(seats) + len(counters)
    second = _state_look(league, index)  # still behind: not a seat on its way into the map
    seats_again, counters_again = second.behind()
    seats = {p: s for p, s in seats.items() if seats_again.get(p) == s}
    counters = {c: v for c, v in counters.items() if c in counters_again}
    for player, seat in seats.items():
        report.drift.append((keys.members_key(game, slug, index), player, None, _seat_number(seat)))
    for counter, value in counters.items():
        report.drift.append((keys.state_key(game, slug, index), counter, None, value))
    if repair and (seats or counters):
        state_raise(league=league, period=period, seats=seats, counters={c: counters_again[c] for c in counters})
        report.repaired += 1


def _seat_number(seat: str) -> int:
    division, number = seat.split(":")
    return int(division) * 2**32 + int(number)


@dataclass
class _BoardLook:
    scores: dict[str, int | None]
    board: dict[str, int]

    def apart(self) -> set[str]:
        return {p for p in set(self.scores) | set(self.board) if self.board.get(p) != self.scores.get(p)}


def _board_look(league: League, period: Period, cohort: Cohort, players: list[str]) -> _BoardLook:
    """The second look at these players of a cohort: the ledger's scores and the board's."""
    scores, _ = cohort_scores(league=league, period=period, cohort=cohort, player_ids=players)
    found = boards_client().zmscore(board_of(league, period, cohort).key, players)
    board = {p: int(score) for p, score in zip(players, found, strict=True) if score is not None}
    return _BoardLook({p: s for p, s in scores.items() if s is not None}, board)


def _cohort_reconcile(
    league: League, period: Period, cohort: Cohort, first: "_BoardLook", *, repair: bool, report: PeriodsReport
) -> None:
    report.entries += len(first.scores.keys() | first.board.keys())
    players = sorted(first.apart())
    if not players:
        return
    report.candidates += len(players)
    before = _fingerprints(league, period, players)
    second = _board_look(league, period, cohort, players)
    after = _fingerprints(league, period, players)
    drifted: list[str] = []
    key = board_of(league, period, cohort).key
    for player in players:
        if before[player] != after[player]:
            report.moved += 1
            continue
        live, want = second.board.get(player), second.scores.get(player)
        if live == want or live != first.board.get(player):
            continue
        if before[player][1]:
            report.pending += 1
            continue
        drifted.append(player)
        report.drift.append((key, player, live, want))
    if repair and drifted:
        try:
            written = cohort_players_rewrite(league=league, period=period, cohort=cohort, player_ids=drifted)
        except GamePaused:
            written = None
        if written is None:
            report.unrepaired += len(drifted)
        else:
            report.repaired += 1


_Fingerprint = tuple[frozenset[tuple[int, str, bool]], bool, bool]  # results, pending, hidden


def _fingerprints(league: League, period: Period, players: list[str]) -> dict[str, _Fingerprint]:
    """Each player's rows in the period (result, status, still unapplied) and visibility: equal
    before and after a look means nothing moved in between; `pending`: a result on its way."""
    results: dict[str, set[tuple[int, str, bool]]] = defaultdict(set)
    rows = LeagueResult.objects.filter(
        league=league,
        period=period.index,
        player_id__in=players,
        event__played_at__range=played_between(period.starts_at, period.ends_at),
    )
    for player, event_id, status, outbox_row in rows.values_list(
        "player_id", "event_id", "event__status", "event__unapplied"
    ):
        results[player].add((event_id, status, outbox_row is not None))
    hidden = set(
        Player.objects.filter(game_id=league.game_id, player_id__in=players)
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .values_list("player_id", flat=True)
    )
    found: dict[str, _Fingerprint] = {}
    for p in players:
        mine = frozenset(results.get(p, ()))
        pending = any(status == EventStatus.ACCEPTED and unapplied for _, status, unapplied in mine)
        found[p] = (mine, pending, p in hidden)
    return found
