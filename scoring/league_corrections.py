"""League cohort boards rewritten from the ledger (docs/api.md, "Leagues"): the tournaments'
machinery (entries.py) applied to cohorts.

A player's score on their cohort's board is derived from their `LeagueResult` rows of the period
whose results are still `accepted` (`competitions.scores.counted_score`, the apply script's rules),
and written as an absolute value with the dedup markers of the results it holds
(`boards.writer.competition_scores_write`), so a queued apply of one of them cannot count it again.
The cases:
- a result withdrawn (revoked, withheld for review, refused for overflow): its player's cohort
  board rewritten from what remains; their seat stays (a cohort's size never shrinks: the
  player is off the board, as if that result had never counted);
- a held result approved: a result pending when it was submitted has no `LeagueResult` row, so
  the approval seats its player as a first result would (in its transaction, the undo returned);
  the worker then applies it to the cohort board;
- a player hidden, shown again or deleted: their entries on the cohort boards of the periods not
  ended rewritten (off while hidden or deleted);
- the rebuild of a game (rebuild.py, inside its pause): every live period's assignment state
  (player map, counters, open cohort, free seats) filled again from `LeagueMember` when Redis lost
  it, and every cohort board rewritten from the ledger.
A period whose grace has ended is read from PostgreSQL (its standings): never rewritten.
"""

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from boards.models import Player
from boards.writer import CompetitionBoard, GamePaused, competition_scores_write
from common.redis import boards_client
from competitions.league_assign import Seat, seats_decide, state_fill
from competitions.league_boards import cohort_board
from competitions.league_models import League, LeagueCohort, LeagueMember
from competitions.league_periods import league_period, schedule_of
from competitions.periods import Period, periods_open
from competitions.scores import CountedResult, counted_score
from seasons.models import Game

from .league_entries import league_results_record, leagues_of, seats_of_results
from .league_models import LeagueResult
from .ledger_partitions import played_between
from .models import EventStatus, ScoreEvent

Cohort = tuple[int, int]  # division index, cohort number


@dataclass(frozen=True, slots=True)
class LivePeriod:
    """A league period whose grace has not ended (its cohort boards live in Redis)."""

    league: League
    period: Period


def league_periods_live(*, game_id: int, now: datetime) -> list[LivePeriod]:
    """Each league of the game with each of its periods started and not past its grace."""
    return [
        LivePeriod(league, period)
        for league in leagues_of(game_id=game_id)
        if league.created_at <= now
        for period in periods_open(schedule_of(league), now)
    ]


def _unseen(game_id: int, player_ids: Iterable[str]) -> set[str]:
    """The players among these who are hidden or deleted (off every public board)."""
    return set(
        Player.objects.filter(game_id=game_id, player_id__in=list(player_ids))
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .values_list("player_id", flat=True)
    )


def cohort_results(
    *, league: League, period: Period, cohort: Cohort | None = None, player_ids: list[str] | None = None
) -> dict[Cohort, dict[str, list[CountedResult]]]:
    """Per cohort, each player's results still accepted that count in it (one cohort, or every
    cohort of the period; these players, or all), read from the period's months of the ledger."""
    rows = LeagueResult.objects.filter(
        league=league,
        period=period.index,
        number__isnull=False,
        event__status=EventStatus.ACCEPTED,
        event__played_at__range=played_between(period.starts_at, period.ends_at),
    )
    if cohort is not None:
        rows = rows.filter(division=cohort[0], number=cohort[1])
    if player_ids is not None:
        rows = rows.filter(player_id__in=player_ids)
    found: dict[Cohort, dict[str, list[CountedResult]]] = defaultdict(lambda: defaultdict(list))
    for division, number, player_id, event_id, points, played_at, accepted_at in rows.values_list(
        "division", "number", "player_id", "event_id", "event__points", "event__played_at", "event__accepted_at"
    ):
        found[(division or 0, number or 0)][player_id].append(CountedResult(event_id, points, played_at, accepted_at))
    return found


def board_of(league: League, period: Period, cohort: Cohort) -> CompetitionBoard:
    return cohort_board(league=league, period=period, division=cohort[0], number=cohort[1])


def cohort_scores(
    *, league: League, period: Period, cohort: Cohort, player_ids: list[str] | None
) -> tuple[dict[str, int | None], dict[str, list[CountedResult]]]:
    """What the ledger says of these players on a cohort's board (None: every player with a result
    in it): each one's encoded score (None: off the board, with no result still accepted, or hidden
    or deleted), and the results it holds."""
    board = board_of(league, period, cohort)
    results = cohort_results(league=league, period=period, cohort=cohort, player_ids=player_ids).get(cohort, {})
    players = list(results) if player_ids is None else player_ids
    unseen = _unseen(league.game_id, players)
    scores = {
        player_id: None
        if player_id in unseen
        else counted_score(
            scoring=league.scoring,
            ascending=False,
            starts_at=board.starts_at,
            time_bits=board.time_bits,
            results=results.get(player_id, []),
        )
        for player_id in players
    }
    return scores, dict(results)


def _cohort_lock(league: League, index: int, player_ids: list[str]) -> None:
    """Each player's rewrite lock on the period's cohort boards until the transaction ends (in a
    fixed order): one rewrite of a player's score at a time."""
    with connection.cursor() as cursor:
        for player_id in sorted(player_ids):
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"l:{league.pk}:{index}:{player_id}"]
            )


def cohort_players_rewrite(
    *, league: League, period: Period, cohort: Cohort, player_ids: list[str], pause_held: bool = False
) -> int | None:
    """Rewrite these players' scores on a cohort's board from the ledger, with the dedup markers
    of the results they include. Returns the number changed, None when the game is paused (unless
    the caller is the rebuild holding the pause: `pause_held`)."""
    board = board_of(league, period, cohort)
    with transaction.atomic():
        _cohort_lock(league, period.index, player_ids)
        scores, results = cohort_scores(league=league, period=period, cohort=cohort, player_ids=player_ids)
        included = {p: [(r.event_id, r.accepted_at) for r in found] for p, found in results.items()}
        return competition_scores_write(
            board=board,
            scores=scores,
            included=included,
            dedup_ttl_s=settings.SCORING_DEDUP_TTL_S,
            pause_held=pause_held,
        )


def _rewrite_retrying(league: League, period: Period, cohort: Cohort, player_ids: list[str], tries: int = 50) -> int:
    """`cohort_players_rewrite`, waiting out a rebuild's swap (it takes a moment)."""
    for _ in range(tries):
        written = cohort_players_rewrite(league=league, period=period, cohort=cohort, player_ids=player_ids)
        if written is not None:
            return written
        time.sleep(0.2)
    raise GamePaused(league.game.slug)


_Where = tuple[int, int, int, int]  # league pk, period index, division, number


def _live_cohorts(
    rows: Iterable[tuple[int, int, int | None, int | None, str]], now: datetime
) -> dict[tuple[League, Period, Cohort], list[str]]:
    """The rows' (league, period, division, number, player) grouped by cohort, in periods whose
    grace has not ended; each cohort with its players."""
    grouped: dict[_Where, set[str]] = defaultdict(set)
    for league_id, index, division, number, player_id in rows:
        if number is not None:
            grouped[(league_id, index, division or 0, number)].add(player_id)
    leagues = League.objects.select_related("game").in_bulk({where[0] for where in grouped})
    found: dict[tuple[League, Period, Cohort], list[str]] = {}
    for (league_id, index, division, number), players in sorted(grouped.items()):
        league = leagues[league_id]
        period = league_period(league, index)
        if period is None or period.closes_at <= now:
            continue  # an ended period never changes
        found[(league, period, (division, number))] = sorted(players)
    return found


def league_results_withdrawn(*, event_ids: list[int], now: datetime) -> None:
    """After the commit that took these results out of `accepted`: each cohort board they counted
    on, in a period not ended, rewritten for their players from what remains (their rows stay in
    the ledger: a result counts while it is accepted; the seat stays)."""
    if not event_ids:
        return
    rows = LeagueResult.objects.filter(event_id__in=event_ids).values_list(
        "league_id", "period", "division", "number", "player_id"
    )
    for (league, period, cohort), players in _live_cohorts(rows, now).items():
        _rewrite_retrying(league, period, cohort, players)


def league_player_correct(*, game: Game, player_id: str, now: datetime) -> int:
    """A player hidden, shown again or deleted: their score on each cohort board of the game's
    league periods not ended rewritten from the ledger (off while hidden or deleted). Raises
    GamePaused while a rebuild swaps the game's keys. Returns the number changed."""
    live = league_periods_live(game_id=game.pk, now=now)
    if not live:
        return 0
    # Their seats (a seated player's results all count in their seat's cohort): one lookup of the
    # members' unique key per live period.
    seated = Q()
    for one in live:
        seated |= Q(league_id=one.league.pk, period=one.period.index)
    rows = (
        LeagueMember.objects.filter(seated, player_id=player_id)
        .values_list("league_id", "period", "division", "number", "player_id")
        .distinct()
    )
    changed = 0
    for (league, period, cohort), players in _live_cohorts(rows, now).items():
        written = cohort_players_rewrite(league=league, period=period, cohort=cohort, player_ids=players)
        if written is None:
            raise GamePaused(game.slug)
        changed += written
    return changed


def league_results_approved(*, events: list[ScoreEvent], now: datetime) -> Callable[[], None]:
    """In the transaction that approves these pending results: those without a league row (they
    were pending when submitted, so they seated nobody) are seated as accepted results played
    then would be, in each league period holding them whose grace has not ended, and recorded.
    (A result withheld after it counted keeps its row and its seat.) Returns the undo of the seats
    taken, for a transaction that does not commit. The worker then applies them to the cohort
    boards."""
    if not events:
        return lambda: None
    leagues = leagues_of(game_id=events[0].game_id)
    if not leagues:
        return lambda: None
    placed = set(LeagueResult.objects.filter(event_id__in=[e.id for e in events]).values_list("event_id", "league_id"))
    rows: list[tuple[int, Seat]] = []
    for event in events:
        [seats] = seats_of_results(
            leagues=leagues, results=[(event.player_id, True)], played_at=event.played_at, now=now
        )
        rows += [(event.id, s) for s in seats if (event.id, s.league.pk) not in placed]
    if not rows:
        return lambda: None
    undo = seats_decide(seats=[s for _, s in rows])
    league_results_record(rows=rows, now=now)
    return undo


def league_boards_rebuild(*, game: Game, now: datetime) -> int:
    """Every live league period of the game: its assignment state filled from `LeagueMember` when
    Redis lost it (`state_fill`: a state still filled is left alone), then every cohort board
    rewritten from the ledger: each player with a result in the cohort, and each player on its
    board, gets the score of their results still accepted (results not applied yet included,
    their markers set). Called by the rebuild inside its pause, after the swap that took the
    unapplied results out of the outbox: nothing else writes a cohort board meanwhile (a
    correction finds the game paused and waits), so the period's results are read in one query
    and no player's rewrite lock is taken. Returns the number of players whose score changed."""
    changed = 0
    gone = _gone(game.pk)
    for live in league_periods_live(game_id=game.pk, now=now):
        league, period = live.league, live.period
        state_fill(league=league, period=period)
        results = cohort_results(league=league, period=period)
        for cohort in sorted(set(results) | _cohorts_of(league, period.index)):
            board = board_of(league, period, cohort)
            found = results.get(cohort, {})
            on_board = {str(member) for member in boards_client().zrange(board.key, 0, -1)}
            scores = {
                player_id: None
                if player_id in gone
                else counted_score(
                    scoring=league.scoring,
                    ascending=False,
                    starts_at=board.starts_at,
                    time_bits=board.time_bits,
                    results=found.get(player_id, []),
                )
                for player_id in sorted(set(found) | on_board)
            }
            included = {p: [(r.event_id, r.accepted_at) for r in mine] for p, mine in found.items()}
            written = competition_scores_write(
                board=board,
                scores=scores,
                included=included,
                dedup_ttl_s=settings.SCORING_DEDUP_TTL_S,
                pause_held=True,
            )
            changed += written or 0
    return changed


def _gone(game_id: int) -> set[str]:
    """The game's hidden and deleted players (few: one query for a whole rebuild)."""
    return set(
        Player.objects.filter(game_id=game_id)
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .values_list("player_id", flat=True)
    )


def _cohorts_of(league: League, index: int) -> set[Cohort]:
    """The period's cohorts the database knows of (a board may hold a player with no result left)."""
    return set(LeagueCohort.objects.filter(league=league, period=index).values_list("division", "number")) | set(
        LeagueMember.objects.filter(league=league, period=index).values_list("division", "number").distinct()
    )
