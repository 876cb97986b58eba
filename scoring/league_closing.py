"""A league period's end (docs/api.md, "Leagues", period end): every cohort frozen from the ledger
once and exactly once, its players moved up, kept or moved down, one `league.cohort_final` event
per cohort; then, with `demote_idle`, the players with a division who played nothing move down.

It sits in `scoring` for the reason the tournament freeze does: the standings come from the ledger
(`LeagueResult` rows of results still `accepted`), not from the cohort boards, so results accepted
in the grace and not applied yet count and a board Redis lost changes nothing.

Three steps, each its own transaction, so a large league ends in bounded memory and a killed
worker's successor resumes where it stopped:
1. `_begin`: under the league's row lock, the `LeaguePeriod` row (`closing`) and any cohort row a
   failed submission left out (from the members).
2. `_cohorts_freeze`, repeated: up to CHUNK cohorts not final yet, claimed `FOR UPDATE SKIP LOCKED`
   (two closers share the work, never a cohort), their standings computed and stored
   (`LeagueStanding`, COPY), the players' new divisions upserted (`LeaguePlayer`), the cohorts
   marked final and their events published, in one transaction: a cohort is final with its
   standings, divisions and event, or not at all.
3. `_finish`: under the league's row lock, once no cohort is left: the idle players moved down
   (`demote_idle`, one UPDATE, idempotent by the row's `period`), the period `final`. Then the
   players of the next period who were waiting for this end are seated (`waiting_seat`).
"""

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from boards.codec import reached_seconds
from boards.gone import gone_players
from boards.keys import epoch_micros
from boards.ranking import Ranker
from boards.writer import boards_touched
from common.db import copy_rows
from competitions.league_assign import Seat, members_record, seats_decide, seats_undo
from competitions.league_boards import cohort_id
from competitions.league_keys import cohort_board_key
from competitions.league_models import (
    League,
    LeagueCohort,
    LeagueMember,
    LeagueOutcome,
    LeaguePeriod,
    LeaguePeriodState,
    LeaguePlayer,
    LeagueScoring,
    LeagueStanding,
)
from competitions.league_periods import league_period
from competitions.league_standings import zone_counts
from competitions.periods import Period
from events.services import events_publish_many
from events.types import LEAGUE_COHORT_FINAL

from .league_models import LeagueResult
from .models import EventStatus, ScoreEvent
from .outbox import outbox_add

logger = logging.getLogger(__name__)
CHUNK = 500  # cohorts per transaction


@dataclass(frozen=True)
class Line:
    position: int
    rank: int
    player_id: str
    score: int
    outcome: str
    division_to: int

    def row(self) -> tuple[Any, ...]:
        return (self.position, self.rank, self.player_id, self.score, self.outcome, self.division_to)


def _begin(league_id: int, period: Period, now: datetime) -> League | None:
    """The period's row (closing), created once; None when it is final already."""
    with transaction.atomic():
        league = League.objects.select_for_update().select_related("game").get(pk=league_id)
        row = LeaguePeriod.objects.filter(league=league, index=period.index).first()
        if row is not None and row.state == LeaguePeriodState.FINAL:
            return None
        if row is None:
            LeaguePeriod.objects.create(
                league=league, index=period.index, starts_at=period.starts_at, ends_at=period.ends_at, started_at=now
            )
            with connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {LeagueCohort._meta.db_table} (league_id, period, division, number, players) "
                    f"SELECT DISTINCT league_id, period, division, number, 0 FROM {LeagueMember._meta.db_table} "
                    "WHERE league_id = %s AND period = %s ON CONFLICT DO NOTHING",
                    [league.pk, period.index],
                )
    return league


def _results(league: League, index: int, cohorts: list[LeagueCohort]) -> dict[tuple[int, int], dict[str, list]]:
    """Per cohort, per player: [points, reached second] of their score from the results still
    accepted (sum: the total, reached at the last result with points; best: the best, reached at
    its first)."""
    period = league_period(league, index)
    assert period is not None
    start_us = epoch_micros(period.starts_at)
    best = league.scoring == LeagueScoring.BEST
    found: dict[tuple[int, int], dict[str, list]] = defaultdict(dict)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT r.division, r.number, r.player_id, e.points, "
            f"(extract(epoch FROM e.accepted_at) * 1000000)::bigint FROM {LeagueResult._meta.db_table} r "
            f"JOIN unnest(%s::int[], %s::int[]) AS c(d, n) ON r.division = c.d AND r.number = c.n "
            f"JOIN {ScoreEvent._meta.db_table} e ON e.id = r.event_id "
            "WHERE r.league_id = %s AND r.period = %s AND e.status = %s ORDER BY e.accepted_at, e.id",
            [[c.division for c in cohorts], [c.number for c in cohorts], league.pk, index, EventStatus.ACCEPTED.value],
        )
        for division, number, player_id, points, micros in cursor.fetchall():
            at = reached_seconds(season_start_us=start_us, accepted_us=micros)
            held = found[(division, number)].get(player_id)
            if held is None:
                found[(division, number)][player_id] = [points, at]
            elif best:
                if points > held[0]:
                    held[0], held[1] = points, at
            else:
                held[0] += points
                if points > 0:
                    held[1] = at
    return found


def cohort_lines(league: League, division: int, scores: dict[str, list]) -> list[Line]:
    """A cohort's standings in display order with ranks, outcomes and new divisions."""
    order = sorted(scores.items(), key=lambda item: (-item[1][0], item[1][1], item[0]))
    up, down = zone_counts(league, division, len(order))
    ranker = Ranker(league.game.tie_rule)
    lines = []
    for position, (player_id, (points, _)) in enumerate(order):
        if position < up:
            outcome, to = LeagueOutcome.PROMOTED, division + 1
        elif position >= len(order) - down:
            outcome, to = LeagueOutcome.DEMOTED, division - 1
        else:
            outcome, to = LeagueOutcome.STAYED, division
        lines.append(Line(position, ranker.rank(points), player_id, points, outcome.value, to))
    return lines


def _cohorts_freeze(league: League, period: Period, now: datetime, chunk: int) -> int:
    """Freeze up to `chunk` cohorts not final yet (claimed SKIP LOCKED); returns how many."""
    with transaction.atomic():
        cohorts = list(
            LeagueCohort.objects.select_for_update(skip_locked=True)
            .filter(league=league, period=period.index, final_at__isnull=True)
            .order_by("division", "number")[:chunk]
        )
        if not cohorts:
            return 0
        results = _results(league, period.index, cohorts)
        gone = set(gone_players(game_id=league.game_id).values_list("player_id", flat=True)) if results else set()
        standings: list[tuple[Any, ...]] = []
        divisions: dict[str, int] = {}
        events: list[dict[str, Any]] = []
        names = league.division_names
        for cohort in cohorts:
            scores = {p: v for p, v in results.get((cohort.division, cohort.number), {}).items() if p not in gone}
            lines = cohort_lines(league, cohort.division, scores)
            cohort.players, cohort.final_at = len(lines), now
            name = cohort_id(period=period.index, division_name=names[cohort.division], number=cohort.number)
            for ln in lines:
                standings.append((cohort.pk, league.pk, period.index, *ln.row()))
                divisions[ln.player_id] = ln.division_to
            events.append(_event(league, period, names[cohort.division], name, lines))
        _store(league, period, cohorts, standings, divisions)
        events_publish_many(game=league.game, type=LEAGUE_COHORT_FINAL, items=events, now=now)
        # Their live connections get the frozen cohort (competitions/league_live.py), once committed.
        frozen = [cohort_board_key(league.game.slug, league.slug, period.index, c.division, c.number) for c in cohorts]
        transaction.on_commit(lambda: boards_touched(frozen), robust=True)
    return len(cohorts)


def _event(league: League, period: Period, division: str, cohort: str, lines: list[Line]) -> dict[str, Any]:
    names = league.division_names
    return {
        "league": league.slug,
        "period": period.index,
        "division": division,
        "cohort": cohort,
        "entries": [
            {
                "player_id": ln.player_id,
                "rank": ln.rank,
                "score": ln.score,
                "outcome": ln.outcome,
                "division_to": names[ln.division_to],
            }
            for ln in lines
        ],
    }


def _store(
    league: League,
    period: Period,
    cohorts: list[LeagueCohort],
    standings: list[tuple[Any, ...]],
    divisions: dict[str, int],
) -> None:
    """The chunk's standings (COPY), the players' divisions (one upsert) and the cohorts final."""
    copy_rows(
        LeagueStanding._meta.db_table,
        ["cohort_id", "league_id", "period", "position", "rank", "player_id", "score", "outcome", "division_to"],
        standings,
    )
    players = sorted(divisions)
    table = LeaguePlayer._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (league_id, player_id, division, period) "
            "SELECT %s, p, d, %s FROM unnest(%s::text[], %s::int[]) AS u(p, d) "
            "ON CONFLICT (league_id, player_id) DO UPDATE SET division = EXCLUDED.division, period = EXCLUDED.period",
            [league.pk, period.index, players, [divisions[p] for p in players]],
        )
        cursor.execute(
            f"UPDATE {LeagueCohort._meta.db_table} c SET final_at = %s, players = u.n "
            "FROM unnest(%s::bigint[], %s::int[]) AS u(id, n) WHERE c.id = u.id",
            [cohorts[0].final_at, [c.pk for c in cohorts], [c.players for c in cohorts]],
        )


def _finish(league_id: int, period: Period, now: datetime) -> bool:
    """The idle players moved down (demote_idle) and the period final, once every cohort is."""
    with transaction.atomic():
        league = League.objects.select_for_update().select_related("game").get(pk=league_id)
        row = LeaguePeriod.objects.select_for_update().get(league=league, index=period.index)
        if row.state == LeaguePeriodState.FINAL:
            return False
        cohorts = LeagueCohort.objects.filter(league=league, period=period.index)
        if cohorts.filter(final_at__isnull=True).exists():
            return False  # another closer holds some: it finishes
        if league.demote_idle:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {LeaguePlayer._meta.db_table} p SET division = division - 1, period = %s "
                    "WHERE league_id = %s AND division > 0 AND period < %s AND NOT EXISTS (SELECT 1 FROM "
                    f"{LeagueMember._meta.db_table} m WHERE m.league_id = p.league_id AND m.period = %s "
                    "AND m.player_id = p.player_id)",
                    [period.index, league.pk, period.index, period.index],
                )
        row.state, row.finalized_at = LeaguePeriodState.FINAL, now
        row.cohorts = cohorts.count()
        row.players = LeagueMember.objects.filter(league=league, period=period.index).count()
        row.save(update_fields=["state", "finalized_at", "cohorts", "players"])
    return True


def league_period_close(*, league_id: int, index: int, now: datetime, chunk: int = CHUNK) -> bool:
    """End period `index` of the league (idempotent, resumable): False when it was final already
    or its grace (and the delay) has not ended, or when another closer finishes it."""
    league = League.objects.select_related("game").get(pk=league_id)
    period = league_period(league, index)
    cutoff = now - timedelta(seconds=settings.TOURNAMENT_FREEZE_DELAY_S)
    if period is None or period.closes_at > cutoff:
        return False
    begun = _begin(league_id, period, now)
    if begun is None:
        return False
    frozen = 0
    while True:
        done = _cohorts_freeze(begun, period, now, chunk)
        if not done:
            break
        frozen += done
    finished = _finish(league_id, period, now)
    if finished:
        logger.info("league %s period %d final: %d cohorts frozen by this closer", begun, index, frozen)
        waiting_seat(league=begun, now=now)
    return finished


def periods_to_close(*, now: datetime, limit: int = 100) -> list[tuple[int, int]]:
    """(league id, period index) of the periods whose grace (and the delay) has ended and whose
    end is not done, oldest first per league."""
    cutoff = now - timedelta(seconds=settings.TOURNAMENT_FREEZE_DELAY_S)
    due: list[tuple[int, int]] = []
    for league in League.objects.filter(starts_at__lte=cutoff).order_by("pk"):
        finals = set(
            LeaguePeriod.objects.filter(league=league, state=LeaguePeriodState.FINAL).values_list("index", flat=True)
        )
        index = max(finals, default=0) + 1
        while len(due) < limit:
            period = league_period(league, index)
            if period is None or period.closes_at > cutoff:
                break
            due.append((league.pk, index))
            index += 1
    return due


def league_periods_close_due(*, now: datetime) -> int:
    """End every period due, oldest first; returns how many this call finished."""
    return sum(
        league_period_close(league_id=league_id, index=index, now=now) for league_id, index in periods_to_close(now=now)
    )


def waiting_seat(*, league: League, now: datetime) -> int:
    """Seat the players whose results of a later period waited for an end that is now done: their
    seats decided as a first result's are, their results' rows given the cohort, and the results
    sent to the worker again for the cohort board (their season boards skip them by their dedup
    markers). Returns how many results were placed."""
    waiting = LeagueResult.objects.filter(league=league, number__isnull=True).order_by("event_id")
    by_period: dict[int, list[LeagueResult]] = defaultdict(list)
    for row in waiting.select_related("event"):
        if row.event.status == EventStatus.ACCEPTED:
            by_period[row.period].append(row)
    placed = 0
    for index, rows in sorted(by_period.items()):
        period = league_period(league, index)
        if period is None or period.closes_at <= now:
            continue
        placed += _seat_rows(league, period, rows, now)
    return placed


def _seat_rows(league: League, period: Period, rows: list[LeagueResult], now: datetime) -> int:
    firsts: dict[str, Seat] = {}
    for row in rows:
        firsts.setdefault(row.player_id, Seat(league, period, row.player_id))
    seats = list(firsts.values())
    seats_decide(seats=seats)
    ready = {s.player_id: s for s in seats if s.number is not None}
    try:
        with transaction.atomic():
            members_record(seats=seats, now=now)
            placed = [r for r in rows if r.player_id in ready]
            for r in placed:
                r.division, r.number = ready[r.player_id].division, ready[r.player_id].number
            LeagueResult.objects.bulk_update(placed, ["division", "number"])
            outbox_add([r.event_id for r in placed], accepted_at=now)
    except BaseException:
        seats_undo(seats=seats)
        raise
    return len(placed)
