"""Cohort boards and the league reads (docs/api.md, "Leagues"): the worker's apply writes each
result on its cohort's board once (sum or best, the game's tie rule), and the player and cohort
reads answer the whole cohort with its zones."""

from datetime import timedelta

import pytest
from django.utils import timezone

from boards.writer import events_apply
from competitions.testing import make_league
from scoring.league_entries import league_boards_of
from scoring.models import ScoreEvent
from scoring.testing import drain, event_rows, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db

BASE = "/api/v1/games/arena/leagues/weekly"
DIVISIONS = [
    {"name": "bronze", "promote": 3, "demote": 0},
    {"name": "silver", "promote": 2, "demote": 2},
    {"name": "gold", "promote": 0, "demote": 3},
]


def send(game, key, points, *, now=None):
    body = match_body([{"player_id": p, "points": n} for p, n in points.items()], played_at=now)
    return submit_direct(game, key, body, now=now or timezone.now())


def line(entries):
    return [(e["rank"], e["player_id"], e["score"], e["zone"]) for e in entries]


def test_a_sum_cohort_read_with_ranks_and_zones(client):
    game = make_game()
    key = make_key(game)
    make_league(game, cohort_size=10, divisions=DIVISIONS)
    send(game, key, {"a": 50, "b": 20, "c": 20, "d": 5, "e": 40, "f": 1, "g": 30})
    send(game, key, {"a": 10, "f": 100})
    drain()
    answer = client.get(f"{BASE}/players/c").json()
    assert answer["division"] == "bronze"
    assert answer["period"]["status"] == "active"
    cohort = answer["cohort"]
    assert cohort["id"] == f"{answer['period']['index']}-bronze-1"
    assert cohort["final"] is False
    # 7 players of a cohort of 10: floor(3 x 7 / 10) = 2 promoted, nobody demoted in bronze
    assert line(cohort["entries"]) == [
        (1, "f", 101, "promote"),
        (2, "a", 60, "promote"),
        (3, "e", 40, "stay"),
        (4, "g", 30, "stay"),
        (5, "b", 20, "stay"),
        (5, "c", 20, "stay"),
        (7, "d", 5, "stay"),
    ]
    assert client.get(f"{BASE}/cohorts/{cohort['id']}").json() == cohort


def test_best_scoring_the_first_tie_rule_and_demotion_zones(client):
    game = make_game(tie_rule="first")
    key = make_key(game)
    league = make_league(game, cohort_size=4, scoring="best", divisions=DIVISIONS)
    from competitions.league_models import LeaguePlayer

    for p in "wxyz":
        LeaguePlayer.objects.create(league=league, player_id=p, division=1, period=1)
    now = timezone.now()
    send(game, key, {"x": 30, "w": 10}, now=now - timedelta(seconds=20))
    send(game, key, {"y": 30, "z": 5}, now=now - timedelta(seconds=10))
    send(game, key, {"w": 20, "x": 5}, now=now)
    drain()
    cohort = client.get(f"{BASE}/players/w").json()["cohort"]
    assert cohort["division"] == "silver"
    # 4 of 4: 2 up, 2 down; x reached 30 before y
    assert line(cohort["entries"]) == [
        (1, "x", 30, "promote"),
        (2, "y", 30, "promote"),
        (3, "w", 20, "demote"),
        (4, "z", 5, "demote"),
    ]


def test_a_redelivered_result_counts_once_on_its_cohort(client):
    game = make_game()
    key = make_key(game)
    make_league(game, divisions=DIVISIONS)
    send(game, key, {"maya": 7})
    drain()
    rows = event_rows(ScoreEvent.objects.all())
    events_apply(events=rows, dedup_ttl_s=3600, competitions=league_boards_of(rows))
    entries = client.get(f"{BASE}/players/maya").json()["cohort"]["entries"]
    assert line(entries) == [(1, "maya", 7, "promote")]


def test_unknown_cohorts_players_never_seen_and_an_empty_history(client):
    game = make_game()
    key = make_key(game)
    make_league(game, divisions=DIVISIONS)
    send(game, key, {"maya": 7})
    drain()
    stranger = client.get(f"{BASE}/players/stranger").json()
    assert (stranger["division"], stranger["cohort"]) == ("bronze", None)
    assert client.get(f"{BASE}/players/stranger/history").json() == {"periods": []}
    index = stranger["period"]["index"]
    for bad in (f"{index}-bronze-2", f"{index}-platinum-1", "x-bronze-1", f"{index + 1}-bronze-1"):
        response = client.get(f"{BASE}/cohorts/{bad}")
        assert (response.status_code, response.json()["code"]) in ((404, "unknown_cohort"), (404, "not_found")), bad
    assert client.get(f"{BASE}/cohorts/{index}-bronze-1").status_code == 200
    assert client.get("/api/v1/games/arena/leagues/nope/players/maya").json()["code"] == "unknown_league"
    assert client.get(f"{BASE}/players/bad!id").status_code in (400, 404)
