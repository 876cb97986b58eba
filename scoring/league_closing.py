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
   (`LeagueStanding`), the players' new divisions upserted (`LeaguePlayer`), the cohorts marked
   final, all by one statement in PostgreSQL (window functions over the chunk's results: nothing of
   a standing travels to this process), and their events built by PostgreSQL from the standings
   (`events_publish_select`), in one transaction: a cohort is final with its standings, divisions
   and event, or not at all. docs/performance.md, "A league period's end", has the figures.
3. `_finish`: under the league's row lock, once no cohort is left: the idle players moved down
   (`demote_idle`, one UPDATE, idempotent by the row's `period`), the period `final`. Then the
   players of the next period who were waiting for this end are seated (`waiting_seat`).
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from boards.keys import epoch_micros
from boards.models import Player
from boards.ranking import Above, counted_above
from boards.writer import boards_touched
from competitions.league_assign import Seat, members_record, seats_decide, seats_undo
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
from competitions.periods import Period
from events.services import events_publish_select
from events.types import LEAGUE_COHORT_FINAL

from .league_models import LeagueResult
from .ledger_partitions import played_between
from .models import EventStatus, ScoreEvent
from .outbox import outbox_add

logger = logging.getLogger(__name__)
CHUNK = 1000  # cohorts per transaction
WORK_MEM = "64MB"  # the freeze statement's, per sort and per held CTE


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


# The chunk's standings, computed and stored by PostgreSQL in one statement: the cohorts claimed
# (SKIP LOCKED), each player's score from the results still accepted (sum: the total, reached at
# the last result with points or else the first; best: the best, reached at its first), the hidden
# and deleted players left out, the display order (points down, reached up, player id by code
# point), the rank by the tie rule, the zones (floor(promote x n / size) up, floor(demote x n / size)
# down), then the standings inserted, the players' divisions upserted, the cohorts marked final.
_SCORES = {
    LeagueScoring.SUM: (
        "SELECT cohort_id, division, player_id, sum(points)::bigint AS score, "
        "GREATEST(min(at), max(at) FILTER (WHERE points > 0)) AS at FROM results "
        "GROUP BY cohort_id, division, player_id"
    ),
    LeagueScoring.BEST: (
        "SELECT DISTINCT ON (cohort_id, player_id) cohort_id, division, player_id, points AS score, at "
        "FROM results ORDER BY cohort_id, player_id, points DESC, at"
    ),
}
_RANK = {
    Above.AHEAD: "row_number() OVER display",
    Above.MORE_POINTS: "rank() OVER ranked",
    Above.DISTINCT_POINTS: "dense_rank() OVER ranked",
}
_CLAIM = (
    f"SELECT id, division, number FROM {LeagueCohort._meta.db_table} "
    "WHERE league_id = %s AND period = %s AND final_at IS NULL "
    "ORDER BY division, number LIMIT %s FOR UPDATE SKIP LOCKED"
)
_FREEZE = (
    "WITH claimed AS ("
    "SELECT * FROM unnest(%(ids)s::bigint[], %(divisions)s::int[], %(numbers)s::int[]) AS c(id, division, number)), "
    "results AS ("
    "SELECT c.id AS cohort_id, c.division, r.player_id, e.points, "
    "GREATEST(0, ((extract(epoch FROM e.accepted_at) * 1000000)::bigint - %(start_us)s) / 1000000) AS at "
    # each cohort's rows read off the ledger's cohort index (a lateral join: the planner cannot size
    # the claim, and its guess had it scan the whole league's ledger for every chunk; OFFSET 0 keeps
    # the subquery from being flattened into a plain join)
    f"FROM claimed c CROSS JOIN LATERAL (SELECT player_id, event_id FROM {LeagueResult._meta.db_table} "
    "WHERE league_id = %(league)s AND period = %(period)s AND division = c.division AND number = c.number OFFSET 0) r "
    f"JOIN {ScoreEvent._meta.db_table} e ON e.id = r.event_id AND e.played_at >= %(played_from)s "
    "AND e.played_at < %(played_to)s WHERE e.status = %(accepted)s "
    f"AND NOT EXISTS (SELECT 1 FROM {Player._meta.db_table} g WHERE g.game_id = %(game)s "
    "AND g.player_id = r.player_id AND (g.hidden OR g.deleted_at IS NOT NULL))), "
    "scores AS ({scores}), "
    "ordered AS ("
    "SELECT cohort_id, division, player_id, score, row_number() OVER display - 1 AS position, "
    "{rank} AS rank, count(*) OVER (PARTITION BY cohort_id) AS n FROM scores "
    'WINDOW display AS (PARTITION BY cohort_id ORDER BY score DESC, at, player_id COLLATE "C"), '
    "ranked AS (PARTITION BY cohort_id ORDER BY score DESC)), "
    "zoned AS ("
    "SELECT *, (%(promote)s::int[])[division + 1] * n / %(size)s AS up, "
    "(%(demote)s::int[])[division + 1] * n / %(size)s AS down FROM ordered), "
    "lines AS ("
    "SELECT cohort_id, division, player_id, score, position, rank, n, "
    "CASE WHEN position < up THEN %(promoted)s WHEN position >= n - down THEN %(demoted)s ELSE %(stayed)s END "
    "AS outcome, "
    "CASE WHEN position < up THEN division + 1 WHEN position >= n - down THEN division - 1 ELSE division END "
    "AS division_to FROM zoned), "
    "standings AS ("
    f"INSERT INTO {LeagueStanding._meta.db_table} "
    "(cohort_id, league_id, period, position, rank, player_id, score, outcome, division_to) "
    "SELECT cohort_id, %(league)s, %(period)s, position, rank, player_id, score, outcome, division_to FROM lines), "
    "players AS ("
    f"INSERT INTO {LeaguePlayer._meta.db_table} (league_id, player_id, division, period) "
    "SELECT %(league)s, player_id, division_to, %(period)s FROM lines ORDER BY player_id "
    "ON CONFLICT (league_id, player_id) DO UPDATE SET division = EXCLUDED.division, period = EXCLUDED.period), "
    "counted AS (SELECT c.id, count(l.player_id) AS n FROM claimed c LEFT JOIN lines l ON l.cohort_id = c.id "
    "GROUP BY c.id), "
    "marked AS ("
    f"UPDATE {LeagueCohort._meta.db_table} f SET final_at = %(now)s, players = counted.n FROM counted "
    "WHERE f.id = counted.id) "
    "SELECT count(*) FROM counted"
)
# A frozen cohort's `league.cohort_final` data, built from its standings as the contract writes it
# (compact JSON, the keys in the contract's order); one row per cohort, in the claim's order.
_EVENTS = (
    """SELECT '{"league":' || to_json(%s::text)::text || ',"period":' || %s::int """
    """|| ',"division":' || to_json(c.name)::text """
    """|| ',"cohort":' || to_json(%s::int || '-' || c.name || '-' || c.number)::text """
    """|| ',"entries":[' || coalesce(s.entries, '') || ']}', c.n """
    "FROM unnest(%s::bigint[], %s::text[], %s::int[]) WITH ORDINALITY AS c(id, name, number, n) "
    """LEFT JOIN LATERAL (SELECT string_agg('{"player_id":' || to_json(l.player_id)::text """
    """|| ',"rank":' || l.rank || ',"score":' || l.score || ',"outcome":' || to_json(l.outcome)::text """
    """|| ',"division_to":' || to_json((%s::text[])[l.division_to + 1])::text || '}', ',' ORDER BY l.position) """
    f"AS entries FROM {LeagueStanding._meta.db_table} l WHERE l.cohort_id = c.id) s ON true"
)


def _cohorts_freeze(league: League, period: Period, now: datetime, chunk: int) -> int:
    """Freeze up to `chunk` cohorts not final yet (claimed SKIP LOCKED), their standings, players'
    divisions, final marks and events in one transaction; returns how many."""
    names = league.division_names
    statement = _FREEZE.format(
        scores=_SCORES[LeagueScoring(league.scoring)], rank=_RANK[counted_above(league.game.tie_rule)]
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_CLAIM, [league.pk, period.index, chunk])
        claimed = cursor.fetchall()
        if not claimed:
            return 0
        # The chunk's lines are held once for the three writes that read them, and sorted twice: in
        # memory, not spilled to temporary files (a chunk of 1,000 cohorts: about 10 MB). No JIT: the
        # planner cannot size the claim and the events' lateral reads, and its guesses made it
        # compile the events' statement for 0.8 s a chunk.
        # Committed without waiting for the WAL's flush (a third of the time at 1,000,000 players
        # went in 34 commits' flushes): the next chunk is computed while the WAL writer flushes this
        # one. A crash of PostgreSQL may lose the last chunks committed so; the database stays
        # consistent and the next run freezes them again from the ledger, to the same standings.
        # Nothing leaves the database before it is flushed: the feed numbers the events and the
        # dispatcher claims their deliveries in synchronous commits, which flush the WAL before them.
        cursor.execute(
            "SELECT set_config('work_mem', %s, true), set_config('jit', 'off', true), "
            "set_config('synchronous_commit', 'off', true)",
            [WORK_MEM],
        )
        cursor.execute(statement, _freeze_params(league, period, claimed, now))
        events_publish_select(
            game=league.game,
            type=LEAGUE_COHORT_FINAL,
            query=_EVENTS,
            params=[
                league.slug,
                period.index,
                period.index,
                [pk for pk, _, _ in claimed],
                [names[division] for _, division, _ in claimed],
                [number for _, _, number in claimed],
                names,
            ],
            now=now,
        )
        # Their live connections get the frozen cohort (competitions/league_live.py), once committed.
        game, slug = league.game.slug, league.slug
        frozen = [cohort_board_key(game, slug, period.index, division, number) for _, division, number in claimed]
        transaction.on_commit(lambda: boards_touched(frozen), robust=True)
    return len(claimed)


def _freeze_params(league: League, period: Period, claimed: list[tuple[int, int, int]], now: datetime) -> dict:
    played_from, played_to = played_between(period.starts_at, period.ends_at)
    return {
        "ids": [pk for pk, _, _ in claimed],
        "divisions": [division for _, division, _ in claimed],
        "numbers": [number for _, _, number in claimed],
        "league": league.pk,
        "period": period.index,
        "start_us": epoch_micros(period.starts_at),
        # the period's months only (its results were played in it): a constant range the planner prunes by
        "played_from": played_from,
        "played_to": played_to,
        "accepted": EventStatus.ACCEPTED.value,
        "game": league.game_id,
        "promote": [d["promote"] for d in league.divisions],
        "demote": [d["demote"] for d in league.divisions],
        "size": league.cohort_size,
        "promoted": LeagueOutcome.PROMOTED.value,
        "demoted": LeagueOutcome.DEMOTED.value,
        "stayed": LeagueOutcome.STAYED.value,
        "now": now,
    }


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
    waiting = LeagueResult.objects.filter(league=league, number__isnull=True)
    placed = 0
    for index in waiting.order_by("period").values_list("period", flat=True).distinct():
        period = league_period(league, index)
        if period is None or period.closes_at <= now:
            continue
        # Joined to the ledger within the period's months (constant bounds): by the event id alone
        # the planner may read every month's index.
        played = played_between(period.starts_at, period.ends_at)
        found = waiting.filter(period=index, event__played_at__range=played).select_related("event")
        rows = [row for row in found.order_by("event_id") if row.event.status == EventStatus.ACCEPTED]
        if rows:
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
            outbox_add([(r.event_id, r.event.played_at) for r in placed], accepted_at=now)
    except BaseException:
        seats_undo(seats=seats)
        raise
    return len(placed)
