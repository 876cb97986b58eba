"""Ranks by each tie rule, around-me windows, and the periods results land in."""

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from boards.services import season_regions_fix
from boards.testing import record
from seasons.testing import make_game

pytestmark = pytest.mark.django_db

# Points per player; players with equal points reach them at different accept times, given by
# the order of this list (earlier first), so "first" and the entry order are well defined.
BOARD = [("bob", 100), ("amy", 100), ("eve", 50), ("dan", 50), ("cat", 50), ("gus", 10), ("fay", 10)]
EXPECTED = {
    "competition": [1, 1, 3, 3, 3, 6, 6],
    "dense": [1, 1, 2, 2, 2, 3, 3],
    "first": [1, 2, 3, 4, 5, 6, 7],
}


def seed(game, rows, start):
    for i, (player, points) in enumerate(rows):
        record(game, player, points, played_at=start, accepted_at=start + timedelta(seconds=10 + i))


@pytest.mark.parametrize("rule", ["competition", "dense", "first"])
def test_ties_at_the_top_middle_and_bottom(client, rule):
    start = timezone.now() - timedelta(hours=2)
    game = make_game(tie_rule=rule, start=start - timedelta(days=1))
    # Submit in reverse id order within ties to show the order comes from reach time, not ids.
    seed(game, BOARD, start)
    top = client.get("/api/v1/games/arena/boards/all/top?n=10").json()
    assert top["tie_rule"] == rule
    assert [e["player_id"] for e in top["entries"]] == [p for p, _ in BOARD]
    assert [e["rank"] for e in top["entries"]] == EXPECTED[rule]
    for (player, points), rank in zip(BOARD, EXPECTED[rule], strict=True):
        me = client.get(f"/api/v1/games/arena/boards/all/players/{player}").json()
        assert (me["score"], me["rank"], me["total"]) == (points, rank, 7)
    # Percentile: share strictly below. cat has fay and gus below: 2/7 = 28.57 -> 28.5 (floored).
    assert client.get("/api/v1/games/arena/boards/all/players/cat").json()["percentile"] == 28.5
    # The top-n page boundary inside a tie keeps the entry order and the ranks.
    top4 = client.get("/api/v1/games/arena/boards/all/top?n=4").json()["entries"]
    assert [(e["player_id"], e["rank"]) for e in top4] == list(
        zip([p for p, _ in BOARD][:4], EXPECTED[rule][:4], strict=True)
    )


def test_equal_scores_reached_in_the_same_second_order_by_player_id(client):
    start = timezone.now() - timedelta(hours=1)
    game = make_game(tie_rule="first", start=start - timedelta(days=1))
    for player in ["zed", "abe", "max"]:
        record(game, player, 5, played_at=start, accepted_at=start)
    entries = client.get("/api/v1/games/arena/boards/all/top").json()["entries"]
    assert [(e["player_id"], e["rank"]) for e in entries] == [("abe", 1), ("max", 2), ("zed", 3)]
    assert client.get("/api/v1/games/arena/boards/all/players/zed").json()["rank"] == 3
    around = client.get("/api/v1/games/arena/boards/all/players/max/around?r=0").json()["entries"]
    assert [e["player_id"] for e in around] == ["max"]


def test_a_reach_time_only_moves_with_points(client):
    """A later 0-point result does not make a player 'reach' their score later."""
    start = timezone.now() - timedelta(hours=1)
    game = make_game(tie_rule="first", start=start - timedelta(days=1))
    record(game, "amy", 10, played_at=start, accepted_at=start)
    record(game, "bob", 10, played_at=start, accepted_at=start + timedelta(seconds=5))
    record(game, "amy", 0, played_at=start, accepted_at=start + timedelta(seconds=9))
    entries = client.get("/api/v1/games/arena/boards/all/top").json()["entries"]
    assert [e["player_id"] for e in entries] == ["amy", "bob"]


def test_around_slides_at_both_ends_and_returns_small_boards_whole(client):
    start = timezone.now() - timedelta(hours=3)
    game = make_game(start=start - timedelta(days=1))
    rows = [(f"p{i:02d}", 1000 - i * 10) for i in range(20)]
    seed(game, rows, start)

    def around(player, r):
        response = client.get(f"/api/v1/games/arena/boards/all/players/{player}/around?r={r}")
        assert response.status_code == 200
        return [e["player_id"] for e in response.json()["entries"]]

    ids = [p for p, _ in rows]
    assert around("p00", 3) == ids[0:7]
    assert around("p01", 3) == ids[0:7]
    assert around("p10", 3) == ids[7:14]
    assert around("p18", 3) == ids[13:20]
    assert around("p19", 3) == ids[13:20]
    assert around("p05", 50) == ids
    assert around("p05", 0) == ["p05"]
    entries = client.get("/api/v1/games/arena/boards/all/players/p19/around?r=2").json()["entries"]
    assert [e["rank"] for e in entries] == [16, 17, 18, 19, 20]


def test_read_errors(client):
    game = make_game()
    record(game, "amy", 10)
    base = "/api/v1/games/arena/boards"
    assert client.get(f"{base}/nope/top").json()["code"] == "unknown_board"
    assert client.get(f"{base}/nope/top").status_code == 404
    for query in ["n=0", "n=1001", "n=abc", "n=-1"]:
        response = client.get(f"{base}/all/top?{query}")
        assert response.status_code == 400, query
    for query in ["r=51", "r=-1", "r=x"]:
        assert client.get(f"{base}/all/players/amy/around?{query}").status_code == 400
    for query in ["period=2026-13-01", "period=2026-W54-1", "period=yesterday"]:
        assert client.get(f"{base}/daily/top?{query}").status_code == 400
    assert client.get(f"{base}/weekly/top?period=2026-W99").status_code == 400
    assert client.get(f"{base}/monthly/top?period=2026-13").status_code == 400
    assert client.get(f"{base}/monthly/top?period=2026-10").json()["entries"] == []
    missing = client.get(f"{base}/all/players/nobody")
    assert (missing.status_code, missing.json()["code"]) == (404, "not_ranked")
    assert client.get(f"{base}/all/players/nobody/around").json()["code"] == "not_ranked"
    assert client.get(f"{base}/daily/top?period=2020-01-01").json()["entries"] == []
    assert client.get("/api/v1/games/none/boards/all/top").status_code == 404


def test_iso_weeks_across_the_year_boundary_and_late_arrivals_keep_their_day(client):
    start = datetime(2026, 12, 1, tzinfo=UTC)
    game = make_game(start=start, days=60)
    later = datetime(2027, 1, 10, tzinfo=UTC)
    for player, played in [
        ("dec31", datetime(2026, 12, 31, 12, tzinfo=UTC)),
        ("jan03", datetime(2027, 1, 3, 12, tzinfo=UTC)),
        ("jan04", datetime(2027, 1, 4, 12, tzinfo=UTC)),
    ]:
        assert record(game, player, 5, played_at=played, accepted_at=later).applied == 1
    # Played at 23:59:59Z, arriving after midnight: it counts on its own day.
    late = datetime(2027, 1, 5, 23, 59, 59, tzinfo=UTC)
    record(game, "late", 7, played_at=late, accepted_at=late + timedelta(seconds=40))
    season = game.seasons.get().id

    def players(board, period):
        url = f"/api/v1/games/arena/boards/{board}/top?season={season}&period={period}"
        body = client.get(url).json()
        assert body["period"] == period
        return sorted(e["player_id"] for e in body["entries"])

    assert players("weekly", "2026-W53") == ["dec31", "jan03"]
    assert players("weekly", "2027-W01") == ["jan04", "late"]
    assert players("daily", "2027-01-05") == ["late"]
    assert players("daily", "2027-01-06") == []
    assert players("daily", "2026-12-31") == ["dec31"]
    assert players("monthly", "2026-12") == ["dec31"]
    assert players("monthly", "2027-01") == ["jan03", "jan04", "late"]


def test_best_board_keeps_the_best_single_match(client):
    start = timezone.now() - timedelta(hours=1)
    game = make_game(start=start - timedelta(days=1))
    for points in [30, 80, 50]:
        record(game, "amy", points, played_at=start, accepted_at=start)
    assert client.get("/api/v1/games/arena/boards/best/players/amy").json()["score"] == 80
    assert client.get("/api/v1/games/arena/boards/all/players/amy").json()["score"] == 160


def test_game_and_seasons_endpoints(client):
    game = make_game()
    season_regions_fix(season=game.seasons.get(), candidates={"amy": "eu"})  # amy counts in eu this season
    detail = client.get("/api/v1/games/arena").json()
    season = game.seasons.get()
    assert detail == {
        "game": "arena",
        "name": "Arena",
        "tie_rule": "competition",
        "boards": ["all", "daily", "weekly", "monthly", "best"],
        "regions": ["global", "eu"],
        "current_season": season.id,
    }
    seasons = client.get("/api/v1/games/arena/seasons").json()
    assert seasons["current"] == season.id
    [row] = seasons["seasons"]
    assert row["status"] == "active" and row["grace_s"] == 3600 and row["starts_at"].endswith("Z")
    assert client.get("/api/v1/games/nope").status_code == 404


def test_distribution_buckets_are_equi_depth_disjoint_and_keep_ties_together(client):
    game = make_game()
    now = timezone.now()
    scores = [5] * 30 + list(range(100, 170))  # 100 players, 30 of them tied at 5
    for i, points in enumerate(scores):
        record(game, f"p{i:03d}", points, accepted_at=now)
    body = client.get("/api/v1/games/arena/boards/all/distribution").json()
    assert body["total"] == 100
    buckets = body["buckets"]
    assert sum(b["players"] for b in buckets) == 100
    assert buckets[0] == {"min_score": 5, "max_score": 99, "players": 30}  # the tie is one bucket
    for a, b in itertools.pairwise(buckets):
        assert a["min_score"] <= a["max_score"] < b["min_score"] <= b["max_score"]
    assert buckets[-1]["max_score"] == 169
    assert all(b["players"] <= 6 for b in buckets[1:])  # about 5 each: equi-depth
    assert client.get("/api/v1/games/arena/boards/daily/distribution?period=2020-01-01").json() == {
        "buckets": [],
        "total": 0,
    }


def test_percentile_is_exact_in_the_top_ranks_and_read_from_the_histogram_below(client, monkeypatch):
    from boards import selectors

    monkeypatch.setattr(selectors, "EXACT_RANKS", 10)  # 10,000 in production
    game = make_game()
    now = timezone.now()
    for i in range(200):
        record(game, f"p{i:03d}", i, accepted_at=now)
    top = client.get("/api/v1/games/arena/boards/all/players/p195").json()
    assert (top["percentile"], top["percentile_error"]) == (97.5, 0.0)  # 195 of 200 below: exact
    low = client.get("/api/v1/games/arena/boards/all/players/p050").json()
    assert low["rank"] == 150 and low["percentile_error"] == 1.0  # its bucket: 2 of 200 players
    assert abs(low["percentile"] - 25.0) <= low["percentile_error"]
    assert len(client.get("/api/v1/games/arena/boards/all/distribution").json()["buckets"]) == 100
