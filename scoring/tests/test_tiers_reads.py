"""Tier badges on every answer of a board with tiers (docs/api.md, "Tiers"): each strategy at its
edges (the last player in, the first out, equal scores across a cutoff under each tie rule), a
percent boundary moving as the board grows, the live boundaries of `GET .../tiers`, the fast
entrance's bytes equal to Django's, boards without tiers unchanged, a frozen season's tiers those
in force when it froze."""

import pytest
from django.utils import timezone

from boards import selectors
from boards.events import top_message
from boards.services import board_tiers_set
from boards.tiers import tiers_parse
from common.testing import asgi_request
from scoring.freezing import season_freeze
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_more_reads import DJANGO, same
from seasons.catalog import catalog_publish

pytestmark = pytest.mark.django_db
API = "/api/v1/games/arena"
SCORES = [("a", 50), ("b", 40), ("c", 40), ("d", 30), ("e", 20)]


@pytest.fixture(autouse=True)
def _no_read_throttle(settings):
    settings.READ_RATE_PER_S = 0


def django(path: str, query: str = ""):
    """Django's answer alone (a board split by player is Django's to answer)."""
    return asgi_request(DJANGO, path, query).json()


def seeded(rule="competition", scores=SCORES, **game):
    found = make_game(tie_rule=rule, **game)
    key = make_key(found)
    for player, points in scores:
        body = match_body([{"player_id": player, "points": points, "display_name": player.upper()}])
        submit_direct(found, key, body, now=timezone.now())
    drain()
    return found, key


def tiers(game, by, *cutoffs, board="all"):
    listed = [{"name": f"t{i}", "cutoff": c} for i, c in enumerate(cutoffs)] + [{"name": "rest"}]
    board_tiers_set(game=game, board=board, tiers=tiers_parse({"by": by, "tiers": listed}, ascending=game.ascending))
    catalog_publish(slug=game.slug)


def badges(path="/boards/all/top"):
    return {e["player_id"]: e.get("tier") for e in same(API + path).json()["entries"]}


@pytest.mark.parametrize(
    ("rule", "in_top"),
    [("competition", {"a", "b", "c"}), ("dense", {"a", "b", "c"}), ("first", {"a", "b"})],
)
def test_a_rank_cutoff_takes_every_tie_on_its_rank_but_not_under_first(rule, in_top):
    game, _ = seeded(rule)
    tiers(game, "rank", 2)
    assert {p for p, t in badges().items() if t == "t0"} == in_top
    boundaries = same(f"{API}/boards/all/tiers", fast=False).json()
    assert boundaries["by"] == "rank"
    top = boundaries["tiers"][0]
    assert (top["name"], top["cutoff"], top["players"], top["max_score"]) == ("t0", 2, len(in_top), 50)
    assert top["min_score"] == 40
    rest = boundaries["tiers"][1]
    assert (rest["cutoff"], rest["players"], rest["min_score"]) == (None, 5 - len(in_top), 20)


def test_a_score_cutoff_takes_the_score_on_it_and_every_read_carries_the_tier():
    game, _ = seeded()
    tiers(game, "score", 40, 30)
    assert badges() == {"a": "t0", "b": "t0", "c": "t0", "d": "t1", "e": "rest"}
    assert same(f"{API}/boards/all/players/d").json()["tier"] == "t1"
    assert [e["tier"] for e in same(f"{API}/boards/all/players/d/around", "r=1").json()["entries"]] == [
        "t0",
        "t1",
        "rest",
    ]
    assert {e["player_id"]: e["tier"] for e in same(f"{API}/boards/all/players", "ids=e,a").json()["entries"]} == {
        "a": "t0",
        "e": "rest",
    }
    assert same(f"{API}/boards/all/rank", "score=35").json()["tier"] == "t1"
    assert same(f"{API}/boards/all/rank", "score=29").json()["tier"] == "rest"
    boards = {b["board"]: b["tier"] for b in same(f"{API}/players/a/boards").json()["boards"]}
    assert boards["all"] == "t0" and boards["best"] is None  # `best` has no tiers
    shape = same(f"{API}/boards/all/tiers", fast=False).json()["tiers"]
    assert [(t["players"], t["min_score"], t["max_score"]) for t in shape] == [(3, 40, 50), (1, 30, 30), (1, 20, 20)]


def test_a_percent_boundary_moves_as_the_board_grows():
    game, key = seeded("first")
    tiers(game, "percent", 40)  # ceil(40% of 5) = 2
    assert [p for p, t in badges().items() if t == "t0"] == ["a", "b"]
    for player in ("f", "g"):  # ceil(40% of 7) = 3: c moves up
        submit_direct(game, key, match_body([{"player_id": player, "points": 1}]), now=timezone.now())
    drain()
    assert [p for p, t in badges().items() if t == "t0"] == ["a", "b", "c"]
    assert same(f"{API}/boards/all/players/c").json()["tier"] == "t0"
    # The friends and players reads count the board on Django's side (one more call).
    friends = same(f"{API}/boards/all/players/c/friends", fast=False).json()["entries"]
    assert friends == [{"rank": 1, "board_rank": 3, "player_id": "c", "display_name": "C", "score": 40, "tier": "t0"}]


def test_boards_without_tiers_answer_as_before_and_a_delete_takes_them_away():
    game, _ = seeded()
    assert "tier" not in same(f"{API}/boards/all/top").json()["entries"][0]
    assert "tier" not in same(f"{API}/boards/all/players/a").json()
    assert same(f"{API}/boards/all/tiers", fast=False).json()["code"] == "no_tiers"
    tiers(game, "rank", 1)
    assert badges()["a"] == "t0"
    board_tiers_set(game=game, board="all", tiers=None)
    catalog_publish(slug=game.slug)
    assert "tier" not in same(f"{API}/boards/all/top").json()["entries"][0]


def test_a_lower_is_better_game_meets_a_score_cutoff_at_or_below_it():
    game, _ = seeded(ascending=True)
    tiers(game, "score", 30)
    assert badges() == {"e": "t0", "d": "t0", "b": "rest", "c": "rest", "a": "rest"}
    shape = same(f"{API}/boards/all/tiers", fast=False).json()["tiers"]
    assert [(t["players"], t["min_score"], t["max_score"]) for t in shape] == [(2, 20, 30), (3, 40, 50)]


def test_a_frozen_season_shows_the_tiers_in_force_when_it_froze():
    game, _ = seeded()
    tiers(game, "rank", 1)
    season = game.seasons.get()
    season_freeze(season_id=season.id, now=timezone.now())
    tiers(game, "rank", 4)  # later: the live boards' tiers, not the frozen season's
    frozen = same(f"{API}/boards/all/top", f"season={season.id}", fast=False).json()["entries"]
    assert [e["tier"] for e in frozen] == ["t0", "rest", "rest", "rest", "rest"]
    shape = same(f"{API}/boards/all/tiers", f"season={season.id}", fast=False).json()["tiers"]
    assert [(t["cutoff"], t["players"]) for t in shape] == [(1, 1), (None, 4)]


def test_the_live_push_carries_the_tiers():
    game, _ = seeded()
    tiers(game, "rank", 1)
    view = selectors.board_view(slug="arena", board="all", region=None, season=None, period=None, now=timezone.now())
    message = top_message(view, selectors.board_top(view=view, n=10, cached=False))  # what the publisher sends
    assert [e["tier"] for e in message["entries"]] == ["t0", "rest", "rest", "rest", "rest"]


@pytest.mark.parametrize(("rule", "players"), [("competition", [3, 1, 1]), ("dense", [3, 2, 0]), ("first", [2, 2, 1])])
def test_a_board_split_by_player_answers_what_a_board_of_one_set_answers(rule, players):
    answers = []
    for slug, shards in (("arena", 1), ("split", 3)):
        game = make_game(slug, tie_rule=rule, board_shards=shards)
        key = make_key(game)
        for player, points in SCORES:
            body = match_body([{"player_id": player, "points": points, "display_name": player.upper()}])
            submit_direct(game, key, body, now=timezone.now())
        drain()
        tiers(game, "percent", 40, 80)  # ranks up to 2, then up to 4, of 5
        base = f"/api/v1/games/{slug}/boards/all"
        answers.append(
            (
                django(f"{base}/top")["entries"],
                django(f"{base}/tiers"),
                django(f"{base}/players/c/around", "r=1")["entries"],
                django(f"{base}/players", "ids=e,c")["entries"],
            )
        )
    assert answers[1] == answers[0]
    assert [t["players"] for t in answers[0][1]["tiers"]] == players
