"""A league period's end at scale: N players in cohorts of 30 over 4 divisions, every cohort
frozen, every player's new division written, one `league.cohort_final` event per cohort.

    flock /tmp/bench.lock .venv/bin/python bench/league.py --players 1000000

Writes the ledger straight into PostgreSQL (a game, a season, a league whose period 1 has ended;
one accepted result per player with its LeagueResult row, the members, the cohorts and the
players' divisions), then times `league_period_close` in this process (what the worker runs) and
prints its seconds, the process's peak RSS, the cohorts, events, standings and divisions written,
and the floor measured in the same run: PostgreSQL writing as many standings rows and nothing
else. Deletes its game and everything under it at the end. `--chunk N`: cohorts a transaction.
"""

import argparse
import os
import resource
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")

import django

django.setup()

from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from competitions.league_models import League, LeagueCohort, LeagueMember, LeaguePlayer, LeagueStanding  # noqa: E402
from events.models import Event  # noqa: E402
from scoring.league_closing import CHUNK, league_period_close  # noqa: E402
from scoring.ledger_partitions import partitions_ensure_between  # noqa: E402
from scoring.models import LeagueResult, ScoreEvent  # noqa: E402
from seasons.models import Game, Season  # noqa: E402

SLUG = "bench-league"
SIZE = 30
DIVISIONS = [
    {"name": "bronze", "promote": 10, "demote": 0},
    {"name": "silver", "promote": 7, "demote": 5},
    {"name": "gold", "promote": 5, "demote": 5},
    {"name": "diamond", "promote": 0, "demote": 5},
]


def setup(players: int) -> League:
    game = Game.objects.create(slug=SLUG, name=SLUG, tie_rule="competition")
    now = timezone.now()
    start = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
    season = Season.objects.create(
        game=game, name="s", starts_at=start - timedelta(days=1), ends_at=now + timedelta(days=30), time_bits=24
    )
    league = League.objects.create(
        game=game,
        slug="weekly",
        title="Weekly",
        starts_at=start,
        reset="0 * * * *",
        cohort_size=SIZE,
        divisions=DIVISIONS,
        created_at=start,
    )
    played = start + timedelta(minutes=10)
    partitions_ensure_between(played, now)  # the ledger's month (made by migrate, unless the month just turned)
    per_division = -(-players // 4)
    # player i: division i % 4, position j = i / 4 in it, cohort j / 30 + 1
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ScoreEvent._meta.db_table} (game_id, season_id, match_id, player_id, points, played_at, "
            "accepted_at, duration_s, day, week, status, reason, extra_boards) "
            "SELECT %s, %s, gen_random_uuid(), 'p' || i, (i::bigint * 7919) %% 1000, %s, "
            "%s + (i %% 3000) * interval '1 second', "
            "60, %s, %s, 'accepted', '', '[]'::jsonb FROM generate_series(0, %s - 1) AS i",
            [game.id, season.id, played, played, played.date(), "2026-W01", players],
        )
        cursor.execute(
            f"INSERT INTO {LeagueResult._meta.db_table} (event_id, league_id, period, player_id, division, number) "
            f"SELECT e.id, %s, 1, e.player_id, i %% 4, (i / 4) / {SIZE} + 1 FROM {ScoreEvent._meta.db_table} e "
            "CROSS JOIN LATERAL (SELECT substr(e.player_id, 2)::int AS i) x WHERE e.game_id = %s",
            [league.pk, game.id],
        )
        cursor.execute(
            f"INSERT INTO {LeagueMember._meta.db_table} (league_id, period, player_id, division, number, joined_at) "
            f"SELECT league_id, period, player_id, division, number, %s FROM {LeagueResult._meta.db_table} "
            "WHERE league_id = %s",
            [played, league.pk],
        )
        cursor.execute(
            f"INSERT INTO {LeagueCohort._meta.db_table} (league_id, period, division, number, players) "
            f"SELECT DISTINCT league_id, period, division, number, 0 FROM {LeagueMember._meta.db_table} "
            "WHERE league_id = %s",
            [league.pk],
        )
        cursor.execute(
            f"INSERT INTO {LeaguePlayer._meta.db_table} (league_id, player_id, division, period) "
            f"SELECT league_id, player_id, division, 0 FROM {LeagueMember._meta.db_table} "
            "WHERE league_id = %s AND division > 0",
            [league.pk],
        )
        for model in (ScoreEvent, LeagueResult, LeagueMember, LeagueCohort, LeaguePlayer):
            cursor.execute(f"ANALYZE {model._meta.db_table}")
    cohorts = LeagueCohort.objects.filter(league=league).count()
    print(f"setup: {players} players, {per_division} a division, {cohorts} cohorts")
    return league


def teardown() -> None:
    game = Game.objects.filter(slug=SLUG).first()
    if game is None:
        return
    with connection.cursor() as cursor:
        for league in League.objects.filter(game=game):
            cursor.execute(f"DELETE FROM {LeagueResult._meta.db_table} WHERE league_id = %s", [league.pk])
            cursor.execute(f"DELETE FROM {LeagueStanding._meta.db_table} WHERE league_id = %s", [league.pk])
        cursor.execute(f"DELETE FROM {ScoreEvent._meta.db_table} WHERE game_id = %s", [game.id])
    Event.objects.filter(game=game).delete()
    League.objects.filter(game=game).delete()
    Season.objects.filter(game=game).delete()
    game.delete()


def floor(rows: int) -> float:
    """Seconds PostgreSQL takes to write `rows` standings rows and nothing else: one INSERT ... SELECT
    of generated rows into a table shaped and indexed as the standings (WAL-logged as they are),
    no ledger read, no ordering, no divisions, no events: what the end can never beat."""
    table = LeagueStanding._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_standing_floor")
        cursor.execute(f"CREATE TABLE bench_standing_floor (LIKE {table} INCLUDING DEFAULTS INCLUDING INDEXES)")
        try:
            started = time.perf_counter()
            cursor.execute(
                "INSERT INTO bench_standing_floor (id, cohort_id, league_id, period, position, rank, player_id, "
                f"score, outcome, division_to) SELECT i, i / {SIZE}, 1, 1, i %% {SIZE}, i %% {SIZE} + 1, 'p' || i, "
                "(i::bigint * 7919) %% 1000, 'stayed', 1 FROM generate_series(0, %s - 1) AS i",
                [rows],
            )
            return time.perf_counter() - started
        finally:
            cursor.execute("DROP TABLE bench_standing_floor")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="leave the data in place")
    parser.add_argument("--chunk", type=int, default=CHUNK, help="cohorts per transaction")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor's measure")
    args = parser.parse_args()
    teardown()
    league = setup(args.players)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    done = league_period_close(league_id=league.pk, index=1, now=timezone.now(), chunk=args.chunk)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    events = Event.objects.filter(game=league.game, type="league.cohort_final").count()
    standings = LeagueStanding.objects.filter(league=league).count()
    moved = LeaguePlayer.objects.filter(league=league, period=1).count()
    print(f"period end: {'done' if done else 'NOT DONE'} in {elapsed:.1f} s ({args.chunk} cohorts a transaction)")
    print(f"peak RSS: {peak:.0f} MB (before the end: {before:.0f} MB)")
    print(
        f"cohorts frozen: {LeagueCohort.objects.filter(league=league, final_at__isnull=False).count()}, "
        f"events: {events}, standings: {standings}, divisions written: {moved}"
    )
    if not args.no_floor:
        print(f"floor: PostgreSQL writes {standings} standings rows alone in {floor(standings):.1f} s")
    if not args.keep:
        teardown()


if __name__ == "__main__":
    main()
