"""The live league reads with the boards on a real Redis Cluster (REDIS_CLUSTER_URL): Django's path
(the fast entrance hands every cluster read on), the cohort's board, hidden players and names read
one by one from their slots, the same answer as on one Redis."""

import pytest
from django.core.asgi import get_asgi_application
from django.utils import timezone

from boards.keys import hidden_key
from common.operations import FAST_ANSWERS
from common.redis import boards_client
from common.testing import asgi_request
from competitions.league_fastpath import FastLeagues
from competitions.testing import make_league
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_tournament_cluster import cluster_boards  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db
BASE = "/api/v1/games/arena/leagues/weekly"
DIVISIONS = [
    {"name": "bronze", "promote": 2, "demote": 0},
    {"name": "silver", "promote": 1, "demote": 1},
    {"name": "gold", "promote": 0, "demote": 2},
]


def test_the_cohort_reads_on_a_cluster(cluster_boards, client):  # noqa: F811
    game = make_game()
    key = make_key(game)
    make_league(game, cohort_size=5, divisions=DIVISIONS)
    results = [
        {"player_id": p, "points": n, "display_name": p.title()}
        for p, n in [("maya", 50), ("leo", 30), ("kim", 5), ("ana", 40)]
    ]
    submit_direct(game, key, match_body(results), now=timezone.now())
    drain()
    boards_client().sadd(hidden_key("arena"), "ana")
    answer = client.get(f"{BASE}/players/maya").json()
    cohort = answer["cohort"]
    # 3 shown of 5: floor(2 x 3 / 5) = 1 up
    assert [(e["rank"], e["player_id"], e["display_name"], e["score"], e["zone"]) for e in cohort["entries"]] == [
        (1, "maya", "Maya", 50, "promote"),
        (2, "leo", "Leo", 30, "stay"),
        (3, "kim", "Kim", 5, "stay"),
    ]
    assert client.get(f"{BASE}/cohorts/{cohort['id']}").json() == cohort
    before = FAST_ANSWERS.total()
    fast = asgi_request(FastLeagues(get_asgi_application()), f"{BASE}/players/maya")
    assert (fast.json(), FAST_ANSWERS.total()) == (answer, before)  # Django's answer, handed on
