"""The live league reads on the fast entrance (competitions/league_fastpath.py): the player read and
the cohort read of the current period answered from Redis with the bytes Django answers, every
tie rule, 404s included; past periods, unseated players after the first period and leagues
without their copy in Redis handed on to Django."""

from datetime import timedelta

import pytest
from django.core.asgi import get_asgi_application
from django.utils import timezone

from boards.keys import hidden_key
from common.operations import FAST_ANSWERS
from common.redis import boards_client
from common.testing import asgi_request
from competitions import league_keys
from competitions.league_fastpath import ROUTER, FastLeagues, confs_forget
from competitions.league_standings import conf_of
from competitions.testing import make_league
from scoring.league_closing import league_period_close
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db

DJANGO = get_asgi_application()
FAST = FastLeagues(DJANGO)
BASE = "/api/v1/games/arena/leagues/weekly"
DIVISIONS = [
    {"name": "bronze", "promote": 2, "demote": 0},
    {"name": "silver", "promote": 1, "demote": 1},
    {"name": "gold", "promote": 0, "demote": 2},
]


async def _no_django(scope, receive, send):
    raise AssertionError(f"Django was asked for {scope['path']}")


FAST_ONLY = FastLeagues(_no_django)


@pytest.fixture(autouse=True)
def _fresh_copies():
    confs_forget()
    yield
    confs_forget()


def same(path: str, *, fast: bool = True):
    """GET through the fast entrance and through Django alone: the same status, headers and bytes.
    `fast`: the fast entrance answers by itself; else it hands on to Django."""
    before = FAST_ANSWERS.total()
    answered = asgi_request(FAST_ONLY if fast else FAST, path)
    assert FAST_ANSWERS.total() == before + (1 if fast else 0), (path, "answered by the wrong entrance")
    slow = asgi_request(DJANGO, path)
    assert (answered.status_code, answered.raw_headers, answered.content) == (
        slow.status_code,
        slow.raw_headers,
        slow.content,
    ), path
    return slow


def send(game, key, points, *, now=None):
    results = [{"player_id": p, "points": n, "display_name": p.title()} for p, n in points.items()]
    return submit_direct(game, key, match_body(results, played_at=now), now=now or timezone.now())


def seeded(rule="competition", **config):
    """Period 4 of an hourly league (cohorts of 5): one full bronze cohort with a tie, and a second
    bronze cohort of one."""
    game = make_game(tie_rule=rule)
    key = make_key(game)
    league = make_league(game, cohort_size=5, divisions=DIVISIONS, **config)
    send(game, key, {"maya": 50, "leo": 30, "ana": 30, "zed": 10, "kim": 5})
    send(game, key, {"solo": 1, "maya": 20})
    drain()
    return league


@pytest.mark.parametrize("rule", ["competition", "dense", "first"])
def test_the_fast_entrance_answers_the_live_reads_as_django_does(rule):
    seeded(rule)
    assert same(f"{BASE}/players/maya", fast=False).status_code == 200  # Django writes the league's copy
    for player in ["maya", "leo", "ana", "zed", "kim", "solo"]:
        answer = same(f"{BASE}/players/{player}").json()
        assert answer["cohort"] is not None and answer["division"] == "bronze"
    cohort = same(f"{BASE}/players/maya").json()["cohort"]
    index = cohort["period"]["index"]
    assert (cohort["id"], cohort["final"], cohort["period"]["status"]) == (f"{index}-bronze-1", False, "active")
    ranks = {"competition": [1, 2, 2, 4, 5], "dense": [1, 2, 2, 3, 4], "first": [1, 2, 3, 4, 5]}[rule]
    # 5 of 5 in bronze: 2 up, nobody down; leo and ana reached 30 in one second: by id.
    assert [(e["rank"], e["player_id"], e["display_name"], e["score"], e["zone"]) for e in cohort["entries"]] == [
        (ranks[0], "maya", "Maya", 70, "promote"),
        (ranks[1], "ana", "Ana", 30, "promote"),
        (ranks[2], "leo", "Leo", 30, "stay"),
        (ranks[3], "zed", "Zed", 10, "stay"),
        (ranks[4], "kim", "Kim", 5, "stay"),
    ]
    assert same(f"{BASE}/cohorts/{index}-bronze-1").json() == cohort
    assert [e["player_id"] for e in same(f"{BASE}/cohorts/{index}-bronze-2").json()["entries"]] == ["solo"]
    for bad in (f"{index}-bronze-3", f"{index}-bronze-0", f"{index}-platinum-1", "x-bronze-1", "0-bronze-1"):
        response = same(f"{BASE}/cohorts/{bad}")
        assert (response.status_code, response.json()["code"]) == (404, "unknown_cohort"), bad
    bad_id = same(f"{BASE}/players/bad!id")
    assert (bad_id.status_code, bad_id.json()["code"]) == (400, "invalid")
    for op in ROUTER.operations:
        before = FAST_ANSWERS[op.id]
        path = "/api/v1/" + op.path.format(
            game="arena", league_id="weekly", player_id="maya", cohort_id=f"{index}-bronze-1"
        )
        assert same(path).status_code == 200, op.id
        assert FAST_ANSWERS[op.id] == before + 1, op.id


def test_hidden_players_leave_the_cohort_and_its_zones_on_both_entrances():
    seeded()
    same(f"{BASE}/players/maya", fast=False)
    boards_client().sadd(hidden_key("arena"), "ana")  # as a privacy request hides
    entries = same(f"{BASE}/players/maya").json()["cohort"]["entries"]
    # 4 shown of 5: floor(2 x 4 / 5) = 1 up.
    assert [(e["player_id"], e["zone"]) for e in entries] == [
        ("maya", "promote"),
        ("leo", "stay"),
        ("zed", "stay"),
        ("kim", "stay"),
    ]


def test_what_the_fast_entrance_hands_on_to_django():
    league = seeded()
    # No copy of the league in Redis yet (nothing has committed in this test's transaction).
    assert same(f"{BASE}/players/maya", fast=False).status_code == 200
    assert same("/api/v1/games/arena/leagues/nope/players/maya", fast=False).json()["code"] == "unknown_league"
    # A player with no seat after the first period: their division is PostgreSQL's.
    stranger = same(f"{BASE}/players/stranger", fast=False).json()
    assert (stranger["division"], stranger["cohort"]) == ("bronze", None)
    # A period past its grace (frozen, or not yet): Django's.
    index = same(f"{BASE}/players/maya").json()["period"]["index"]
    at = league.starts_at + timedelta(hours=2, minutes=30)  # period 3
    send(league.game, make_key(league.game), {"old": 9}, now=at)
    drain()
    assert league_period_close(league_id=league.pk, index=3, now=timezone.now())
    past = same(f"{BASE}/cohorts/{index - 1}-bronze-1", fast=False).json()
    assert (past["final"], [(e["player_id"], e["zone"]) for e in past["entries"]]) == (True, [("old", "stay")])
    # The assignment state lost (a flush): Django answers from PostgreSQL.
    game, slug = "arena", "weekly"
    boards_client().delete(league_keys.state_key(game, slug, index))
    assert same(f"{BASE}/players/maya", fast=False).json()["cohort"]["id"] == f"{index}-bronze-1"
    assert same(f"{BASE}/cohorts/{index}-bronze-1", fast=False).status_code == 200


def test_in_the_first_period_a_player_never_seen_is_answered_fast_in_the_lowest_division():
    game = make_game()
    key = make_key(game)
    start = timezone.now().replace(minute=0, second=0, microsecond=0)
    make_league(game, starts_at=start, created_at=start - timedelta(minutes=1), divisions=DIVISIONS)
    send(game, key, {"maya": 5})
    drain()
    same(f"{BASE}/players/maya", fast=False)
    stranger = same(f"{BASE}/players/stranger").json()
    assert (stranger["division"], stranger["cohort"], stranger["period"]["index"]) == ("bronze", None, 1)


def test_a_changed_league_is_read_again_by_the_fast_entrance(django_capture_on_commit_callbacks):
    league = seeded()
    same(f"{BASE}/players/maya", fast=False)
    same(f"{BASE}/players/maya")
    with django_capture_on_commit_callbacks(execute=True):
        league.title = "Renamed"
        league.save()
    league.refresh_from_db()
    assert boards_client().get(league_keys.conf_version_key("arena", "weekly")) == conf_of(league).version
    assert same(f"{BASE}/players/maya").status_code == 200  # the fast entrance's copy read again
