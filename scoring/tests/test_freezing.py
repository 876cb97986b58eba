"""The freeze ranks inside PostgreSQL (`standings_load`) exactly as the Python path does
(`standings_store` over the ledger's members in display order, `Ranker`), for every tie rule with
ties, ascending games, extra dimensions' boards and hidden players; it attaches a partition of the
season's own, indexed, which reads of the season then use."""

import pytest
from django.db import connection, transaction
from django.utils import timezone

from boards.codec import ScoreOverflow
from boards.kinds import KINDS
from boards.models import FrozenStanding, SeasonRegion
from boards.services import player_profile_set
from boards.standings import standings_store
from scoring.freezing import season_freeze
from scoring.models import ScoreEvent, SeasonTotal
from scoring.selectors import ledger_entries, ledger_has_extra_boards
from scoring.testing import make_key, match_body, submit_direct
from scoring.tests.test_rebuild import dimension_game, seed
from seasons.models import Season, SeasonPointer, SeasonPointerChange

pytestmark = pytest.mark.django_db

COLUMNS = ("board", "region", "period", "position", "rank", "player_id", "score")
TABLE = FrozenStanding._meta.db_table


class _Undo(Exception):
    pass


def python_standings(season: Season) -> list[tuple[object, ...]]:
    """What the Python path (members streamed in display order, `Ranker`) stores, undone after."""
    extras = ledger_has_extra_boards(game=season.game, season_id=season.id)
    rows: list[tuple[object, ...]] = []
    try:
        with transaction.atomic():
            for kind in KINDS.values():
                with ledger_entries(
                    game=season.game, kinds=[kind], season_id=season.id, ordered=True, extras=extras
                ) as chunks:
                    standings_store(season=season, entries=list(chunks))
            rows = sorted(FrozenStanding.objects.filter(season=season).values_list(*COLUMNS))
            raise _Undo
    except _Undo:
        pass
    return rows


def seeded_season(rule: str, ascending: bool):
    """A seeded season with dimensions and a hidden player (p3), and its standings by the Python path."""
    game = dimension_game(tie_rule=rule, ascending=ascending, max_points=100_000)
    seed(game)
    with transaction.atomic():
        player_profile_set(game=game, player_id="p3", hidden=True)
    season = game.seasons.get()
    return season, python_standings(season)


@pytest.mark.parametrize(
    ("rule", "ascending"),
    [("competition", False), ("dense", False), ("first", False), ("competition", True), ("dense", True)],
)
def test_the_freeze_ranks_in_postgresql_as_the_python_path_does(rule, ascending):
    season, expected = seeded_season(rule, ascending)
    assert {row[1] for row in expected} >= {"global", "eu", "na", "country-de", "country-fr"}
    assert "p3" not in {row[5] for row in expected}
    points = {(row[0], row[1], row[2], row[6]) for row in expected}
    assert len(points) < len(expected), "the season has ties on points"
    assert season_freeze(season_id=season.id, now=timezone.now()) == len(expected)
    assert sorted(FrozenStanding.objects.filter(season=season).values_list(*COLUMNS)) == expected


def test_tied_players_rank_by_rule_and_stand_in_code_point_order():
    for rule, want in [("competition", [1, 1, 3]), ("dense", [1, 1, 2]), ("first", [1, 2, 3])]:
        game = dimension_game(tie_rule=rule)
        key = make_key(game)
        now = timezone.now()
        submit_direct(game, key, match_body([{"player_id": p, "points": 5} for p in ["b", "A"]]), now=now)
        submit_direct(game, key, match_body([{"player_id": "0", "points": 3}]), now=now)
        season = game.seasons.get()
        season_freeze(season_id=season.id, now=now)
        board = FrozenStanding.objects.filter(season=season, board="all", region="global").order_by("position")
        assert [(s.position, s.player_id, s.rank) for s in board] == [
            (0, "A", want[0]),
            (1, "b", want[1]),
            (2, "0", want[2]),
        ]
        game.slug = f"done-{rule}"  # the next game may take the slug
        game.save()


def attached(season: Season) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass AND pg_get_expr(c.relpartbound, c.oid) = %s",
            [TABLE, f"FOR VALUES IN ('{season.id}')"],
        )
        return [row[0] for row in cursor.fetchall()]


def parent_indexes(part: str) -> list[str]:
    """The parent's indexes that the indexes of the partition `part` are attached to."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT parent.relname FROM pg_inherits i JOIN pg_class child ON child.oid = i.inhrelid "
            "JOIN pg_class parent ON parent.oid = i.inhparent JOIN pg_index x ON x.indexrelid = child.oid "
            "WHERE x.indrelid = %s::regclass",
            [part],
        )
        return sorted(row[0] for row in cursor.fetchall())


def test_the_season_gets_a_partition_of_its_own_indexed_and_used_by_reads():
    game = dimension_game()
    seed(game, matches=20)
    season = game.seasons.get()
    rows = season_freeze(season_id=season.id, now=timezone.now())
    assert attached(season) == [f"{TABLE}_s{season.id}"]
    part = f"{TABLE}_s{season.id}"
    # Each index built before the attachment became the partition of the parent's: none was built twice.
    assert parent_indexes(part) == ["boards_frozenstanding_pkey", "standing_player", "standing_unique_position"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_index WHERE indrelid = %s::regclass", [part])
        assert cursor.fetchone()[0] == 3
        cursor.execute(f"SELECT count(*) FROM {part}")
        assert cursor.fetchone()[0] == rows
        cursor.execute("SET LOCAL enable_seqscan = off")
        plans = []
        # A player's rows of the season: only the player index leads with the player. (A read by
        # player on one board can use either index; on 400 rows the planner's pick is a coin toss.)
        for where in [
            "AND board = 'all' AND region = 'global' AND period = '' ORDER BY position LIMIT 10",
            "AND player_id = 'p1'",
        ]:
            cursor.execute(f"EXPLAIN SELECT * FROM {TABLE} WHERE season_id = %s {where}", [season.id])
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
    assert f"{part}_position" in plans[0] and "_default" not in plans[0]
    assert f"{part}_player" in plans[1] and "_default" not in plans[1]


def test_a_second_freeze_writes_nothing_and_deleting_the_season_deletes_its_standings():
    game = dimension_game()
    seed(game, matches=10)
    season = game.seasons.get()
    assert season_freeze(season_id=season.id, now=timezone.now()) > 0
    assert season_freeze(season_id=season.id, now=timezone.now()) == 0
    ScoreEvent.objects.filter(game=game).delete()
    SeasonTotal.objects.filter(season=season).delete()
    SeasonRegion.objects.filter(season=season).delete()
    SeasonPointerChange.objects.filter(game=game).delete()
    SeasonPointer.objects.filter(game=game).delete()
    season.delete()  # Django's CASCADE: DELETE through the parent, which reaches the partition
    assert not FrozenStanding.objects.filter(season_id=season.id).exists()


def test_standings_written_through_the_parent_go_on_through_it():
    game = dimension_game()
    seed(game, matches=10)
    season = game.seasons.get()
    FrozenStanding.objects.create(
        season=season, board="all", region="nowhere", period="", position=0, rank=1, player_id="x", score=1
    )
    rows = season_freeze(season_id=season.id, now=timezone.now())
    assert attached(season) == []
    assert FrozenStanding.objects.filter(season=season).count() == rows + 1


def overflowing_season():
    """A season whose one result (player "a") is past its exact capacity."""
    game = dimension_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "a", "points": 5}]), now=timezone.now())
    ScoreEvent.objects.update(points=2**40)  # past 2**(53 - time_bits): written around the checks
    return game.seasons.get()


def test_a_score_past_the_capacity_stops_the_freeze_with_an_overflow():
    season = overflowing_season()
    with pytest.raises(ScoreOverflow, match="a on the all board"):
        season_freeze(season_id=season.id, now=timezone.now())
    season.refresh_from_db()
    assert season.frozen_at is None
    assert attached(season) == []
