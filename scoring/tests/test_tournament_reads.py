"""A tournament period's board, read (docs/api.md, "Tournaments"): top, a player and around, with
`period=`, the game's tie rule, attempts and rewards; the fast entrance answers them by itself,
with the bytes Django answers (competitions/fastpath.py)."""

from datetime import timedelta

import pytest
from django.core.asgi import get_asgi_application
from django.utils import timezone

from common.operations import FAST_ANSWERS
from common.redis import boards_client
from common.testing import asgi_request
from competitions import keys, standings
from competitions.fastpath import ROUTER, FastStandings
from competitions.services import entrant_join
from scoring.players import player_update
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_tournament_results import cup

pytestmark = pytest.mark.django_db

DJANGO = get_asgi_application()
FAST = FastStandings(DJANGO)
BASE = "/api/v1/games/arena/tournaments/cup"
REWARDS = [
    {"rank_from": 1, "rank_to": 1, "reward": {"gems": 500}},
    {"rank_from": 2, "rank_to": 3, "reward": {"gems": 1}},
]


async def _no_django(scope, receive, send):
    raise AssertionError(f"Django was asked for {scope['path']}?{scope.get('query_string', b'').decode()}")


FAST_ONLY = FastStandings(_no_django)  # the fast entrance with nothing behind it


def same(path: str, query: str = "", *, fast: bool = True):
    """GET through the fast entrance and through Django alone: they agree on everything. `fast`:
    the fast entrance answers by itself (counted as its own answer); else it hands on to Django."""
    before = FAST_ANSWERS.total()
    answered = asgi_request(FAST_ONLY if fast else FAST, path, query)
    assert FAST_ANSWERS.total() == before + (1 if fast else 0), (path, query, "answered by the wrong entrance")
    slow = asgi_request(DJANGO, path, query)
    assert (answered.status_code, answered.raw_headers, answered.content) == (
        slow.status_code,
        slow.raw_headers,
        slow.content,
    ), (path, query)
    return slow


def seeded(rule="competition", **config):
    """A cup with a tie (leo and ana on 30), maya ahead, zed behind, and an entrant with no result."""
    game = make_game(tie_rule=rule)
    key = make_key(game)
    tournament = cup(game, max_attempts=3, join_required=False, rewards=REWARDS, **config)
    now = timezone.now()
    for player, points in [("maya", 50), ("leo", 30), ("ana", 30), ("zed", 10), ("maya", 20)]:
        result = {"player_id": player, "points": points, "display_name": player.title()}
        body = match_body([result], tournaments=["cup"])
        submit_direct(game, key, body, now=now)
    drain()
    entrant_join(tournament=tournament, player_id="newbie", now=now)
    return tournament


@pytest.mark.parametrize(
    ("rule", "ranks"),
    [("competition", [1, 2, 2, 4]), ("dense", [1, 2, 2, 3]), ("first", [1, 2, 3, 4])],
)
def test_top_player_and_around_by_the_tie_rule_with_attempts_and_rewards(client, rule, ranks):
    seeded(rule)
    top = client.get(f"{BASE}/top")
    assert top.status_code == 200
    body = top.json()
    assert (body["tournament"], body["final"], body["period"]["index"], body["period"]["status"]) == (
        "cup",
        False,
        1,
        "active",
    )
    # leo and ana tie on 30, reached in the same second: by id.
    assert [(e["player_id"], e["score"], e["rank"]) for e in body["entries"]] == list(
        zip(["maya", "ana", "leo", "zed"], [50, 30, 30, 10], ranks, strict=True)
    )
    by_player = {e["player_id"]: e for e in body["entries"]}
    assert by_player["maya"]["attempts"] == 2 and by_player["zed"]["attempts"] == 1
    assert by_player["maya"]["reward"] == {"gems": 500}
    assert by_player["leo"]["reward"] == {"gems": 1}
    assert by_player["zed"]["reward"] == ({"gems": 1} if ranks[3] == 3 else None)  # bands hold ranks 1-3
    maya = client.get(f"{BASE}/players/maya").json()
    assert maya == {
        "player_id": "maya",
        "display_name": "Maya",
        "score": 50,
        "rank": 1,
        "total": 4,
        "attempts": 2,
        "max_attempts": 3,
        "reward": {"gems": 500},
    }
    newbie = client.get(f"{BASE}/players/newbie").json()
    assert (newbie["score"], newbie["rank"], newbie["attempts"], newbie["reward"]) == (None, None, 0, None)
    nobody = client.get(f"{BASE}/players/nobody")
    assert (nobody.status_code, nobody.json()["code"]) == (404, "not_entered")
    around = client.get(f"{BASE}/players/zed/around", {"r": 1}).json()["entries"]
    assert [e["player_id"] for e in around] == [e["player_id"] for e in body["entries"]][1:]
    far = client.get(f"{BASE}/players/newbie/around")
    assert (far.status_code, far.json()["code"]) == (404, "not_ranked")


def test_ties_order_by_who_reached_the_score_first_then_id_and_asc_puts_the_lowest_first(client):
    seeded("first", order="asc")
    entries = client.get(f"{BASE}/top").json()["entries"]
    # Lower is better: zed's 10, maya's best (lowest) 20, then the 30s by id (reached in the same second).
    assert [(e["player_id"], e["score"], e["rank"]) for e in entries] == [
        ("zed", 10, 1),
        ("maya", 20, 2),
        ("ana", 30, 3),
        ("leo", 30, 4),
    ]


def test_period_parameter_and_refusals(client):
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=150)  # two hours have started since
    game = make_game()
    key = make_key(game)
    # Hourly periods: the active one (at least #2), the one before it in its hour of grace, the next one
    # upcoming, and the one after it (still before ends_at) unknown.
    cup(game, starts_at=start, ends_at=start + timedelta(hours=5), duration_s=3600, reset="0 * * * *", grace_s=3600)
    body = match_body([{"player_id": "maya", "points": 7}], played_at=timezone.now(), tournaments=["cup"])
    submit_direct(game, key, body, now=timezone.now())
    drain()
    current = client.get(f"{BASE}/top").json()
    index = current["period"]["index"]
    assert current["period"]["status"] == "active"
    assert [e["player_id"] for e in current["entries"]] == ["maya"]
    earlier = client.get(f"{BASE}/top", {"period": index - 1}).json()
    assert (earlier["period"]["index"], earlier["period"]["status"], earlier["entries"]) == (index - 1, "grace", [])
    nxt = client.get(f"{BASE}/top", {"period": index + 1}).json()
    assert (nxt["period"]["status"], nxt["entries"]) == ("upcoming", [])
    for query, status, code in [
        ({"period": index + 2}, 404, "unknown_period"),
        ({"period": "0"}, 400, "invalid"),
        ({"period": "x"}, 400, "invalid"),
        ({"n": "0"}, 400, "invalid"),
    ]:
        answer = client.get(f"{BASE}/top", query)
        assert (answer.status_code, answer.json()["code"]) == (status, code), query
    unknown = client.get("/api/v1/games/arena/tournaments/nope/top")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "unknown_tournament")


@pytest.mark.parametrize("rule", ["competition", "dense", "first"])
def test_the_fast_entrance_answers_every_tournament_read_with_djangos_bytes(rule):
    seeded(rule)
    assert {op.id for op in ROUTER.operations} == {"tournament_top", "tournament_player", "tournament_around"}
    asgi_request(DJANGO, f"{BASE}/top")  # Django's read writes the tournament's copy for the fast entrance
    for query in ["", "n=1", "n=3", "period=1"]:
        assert same(f"{BASE}/top", query).status_code == 200
    for player in ["maya", "leo", "ana", "zed", "newbie"]:
        assert same(f"{BASE}/players/{player}").status_code == 200
    for player in ["maya", "ana", "zed"]:
        for r in ["0", "1", "50"]:
            assert same(f"{BASE}/players/{player}/around", f"r={r}").status_code == 200
    assert same(f"{BASE}/players/nobody").status_code == 404  # not_entered, decided here
    assert same(f"{BASE}/players/newbie/around").status_code == 404  # not_ranked
    assert same(f"{BASE}/top", "period=9").status_code == 404  # unknown_period, by the current copy
    assert same(f"{BASE}/top", "n=0").status_code == 400
    for op in ROUTER.operations:
        before = FAST_ANSWERS[op.id]
        path = "/api/v1/" + op.path.format(game="arena", tournament_id="cup", player_id="maya")
        assert same(path).status_code == 200, op.id
        assert FAST_ANSWERS[op.id] == before + 1, op.id


def test_the_fast_entrance_hands_on_what_it_cannot_decide_and_follows_a_changed_tournament(
    django_capture_on_commit_callbacks,
):
    tournament = seeded()
    # No copy of the tournament in Redis yet (nothing has committed in this test's transaction).
    assert same(f"{BASE}/top", fast=False).status_code == 200  # Django answers, and writes the copy
    assert same(f"{BASE}/top").status_code == 200
    boards_client().delete(keys.attempts_key("arena", "cup", 1), keys.entrants_key("arena", "cup", 1))
    assert same(f"{BASE}/players/maya", fast=False).json()["attempts"] == 2  # Django refilled the counters
    assert same(f"{BASE}/players/maya").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        tournament.rewards = [{"rank_from": 1, "rank_to": 4, "reward": {"gems": 2}}]
        tournament.save()
    answered = same(f"{BASE}/top").json()  # the new version: read again by the fast entrance
    assert {e["player_id"]: e["reward"] for e in answered["entries"]}["zed"] == {"gems": 2}
    assert same("/api/v1/games/arena/tournaments/nope/top", fast=False).status_code == 404


def test_the_fast_top_is_served_from_its_copy_until_the_board_the_attempts_or_a_name_change(
    django_capture_on_commit_callbacks,
):
    game = seeded().game
    key = make_key(game)
    asgi_request(DJANGO, f"{BASE}/top")  # the tournament's copy for the fast entrance
    standings.top_cache.clear()
    first = same(f"{BASE}/top").json()
    [held] = standings.top_cache.values()
    assert same(f"{BASE}/top").json() == first
    assert standings.top_cache.values() == [held]  # nothing changed: the same copy, not read again

    # A counted result that does not beat maya's best: only her attempts change.
    submit_direct(game, key, match_body([{"player_id": "maya", "points": 1}], tournaments=["cup"]), now=timezone.now())
    drain()
    attempts = {e["player_id"]: e["attempts"] for e in same(f"{BASE}/top").json()["entries"]}
    assert attempts["maya"] == 3
    with django_capture_on_commit_callbacks(execute=True):
        player_update(game=game, player_id="zed", display_name="Zorro")
    names = {e["player_id"]: e["display_name"] for e in same(f"{BASE}/top").json()["entries"]}
    assert names["zed"] == "Zorro"
