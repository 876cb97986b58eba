"""Finality of a tournament period (docs/api.md, "Finality"): when its grace has ended, its
standings freeze from the ledger once (two freezers at the same moment freeze it once), every
read then says `final` and answers the same from PostgreSQL, also after Redis lost the keys; a
late result is `outside_period`; the `tournament.period_final` event carries the reward bands."""

import json
import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from boards.models import Player
from common.redis import boards_client
from competitions.models import TournamentPeriod, TournamentStanding
from competitions.services import entrant_join
from events.models import Event
from events.types import TOURNAMENT_PERIOD_FINAL
from scoring.tasks import tournaments_freeze
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_tournament_results import cup
from scoring.tournament_freezing import periods_to_freeze, tournament_period_freeze

pytestmark = pytest.mark.django_db
BASE = "/api/v1/games/arena/tournaments/cup"
REWARDS = [
    {"rank_from": 1, "rank_to": 1, "reward": {"gems": 500}},
    {"rank_from": 2, "rank_to": 3, "reward": {"gems": 100}},
]
PLAYS = [("maya", 50), ("leo", 30), ("ana", 30), ("zed", 10), ("maya", 20), ("kim", 5)]


def closed_cup(rule="competition", **config):
    """A cup whose only period (2 minutes, 30 s grace) ended 10 minutes ago, with results played
    and accepted inside it, an entrant with no result, every result applied."""
    game = make_game(tie_rule=rule)
    key = make_key(game)
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=13)
    values = {"starts_at": start, "ends_at": None, "duration_s": 120, "grace_s": 30, "max_attempts": 3}
    tournament = cup(game, rewards=REWARDS, **{**values, **config})
    tournament.created_at = start - timedelta(minutes=1)
    tournament.save()
    for i, (player, points) in enumerate(PLAYS):
        played = start + timedelta(seconds=10 + i)
        body = match_body(
            [{"player_id": player, "points": points, "display_name": player.title()}], played, tournaments=["cup"]
        )
        outcome = submit_direct(game, key, body, now=played + timedelta(seconds=5))
        assert outcome.body["results"][0]["tournaments"]["cup"] == "counted"
    entrant_join(tournament=tournament, player_id="newbie", now=start + timedelta(seconds=30))
    drain()
    return game, key, tournament


def reads(client):
    """Every read of the period: top, each player, around each player."""
    found = {"top": client.get(f"{BASE}/top", {"period": 1}).json()}
    for player in ("maya", "leo", "ana", "zed", "kim", "newbie", "nobody"):
        answer = client.get(f"{BASE}/players/{player}", {"period": 1})
        found[player] = (answer.status_code, answer.json())
        around = client.get(f"{BASE}/players/{player}/around", {"period": 1, "r": 1})
        found[f"{player}/around"] = (around.status_code, around.json())
    return found


def without_status(found):
    """The reads with the period's status and `final` blanked (they change at the freeze)."""
    copy = json.loads(json.dumps(found))
    copy["top"]["period"]["status"] = copy["top"]["final"] = None
    return copy


@pytest.mark.parametrize(
    ("rule", "config"),
    [
        ("competition", {"scoring": "best"}),
        ("dense", {"scoring": "sum"}),
        ("first", {"scoring": "latest"}),
        ("competition", {"scoring": "best", "order": "asc"}),
        ("first", {"scoring": "sum", "order": "asc"}),
    ],
)
def test_a_period_freezes_once_to_what_its_board_answered_and_reads_then_come_from_postgresql(client, rule, config):
    closed_cup(rule, **config)
    before = reads(client)
    assert (before["top"]["period"]["status"], before["top"]["final"]) == ("grace", False)
    assert before["newbie"][1]["score"] is None and before["nobody"][0] == 404

    assert tournaments_freeze() == 1
    assert tournaments_freeze() == 0  # once
    after = reads(client)
    assert (after["top"]["period"]["status"], after["top"]["final"]) == ("final", True)
    assert without_status(after) == without_status(before)
    periods = client.get(f"{BASE}/periods").json()["periods"]
    assert [(p["index"], p["status"], p["entrants"]) for p in periods] == [(1, "final", 6)]

    boards_client().flushall()  # the period's keys gone: nothing changes
    assert reads(client) == after


def test_the_final_event_carries_the_reward_bands_and_a_late_result_is_outside_the_period(client):
    game, key, _ = closed_cup()
    assert tournaments_freeze() == 1
    [event] = Event.objects.filter(type=TOURNAMENT_PERIOD_FINAL)
    data = json.loads(event.data)
    assert (data["tournament"], data["period"], data["entrants"]) == ("cup", 1, 6)
    assert data["rewards"] == [
        {"player_id": "maya", "rank": 1, "score": 50, "reward": {"gems": 500}},
        {"player_id": "leo", "rank": 2, "score": 30, "reward": {"gems": 100}},  # reached 30 first
        {"player_id": "ana", "rank": 2, "score": 30, "reward": {"gems": 100}},
    ]
    assert data["starts_at"].endswith("Z") and data["ends_at"] > data["starts_at"]
    top = client.get(f"{BASE}/top").json()

    # A result played inside the period, sent now: outside_period, and the standings never change.
    played = TournamentPeriod.objects.get().starts_at + timedelta(seconds=20)
    late = submit_direct(
        game, key, match_body([{"player_id": "zed", "points": 9000}], played, tournaments=["cup"]), now=timezone.now()
    )
    assert late.body["results"][0]["tournaments"]["cup"] == "outside_period"
    drain()
    assert client.get(f"{BASE}/top").json() == top


def test_a_player_hidden_after_the_freeze_leaves_the_reads_and_nobody_moves(client):
    game, _, _ = closed_cup()
    tournaments_freeze()
    top = client.get(f"{BASE}/top").json()["entries"]
    Player.objects.filter(game=game, player_id="ana").update(hidden=True)
    shown = client.get(f"{BASE}/top").json()["entries"]
    assert shown == [e for e in top if e["player_id"] != "ana"]
    assert client.get(f"{BASE}/players/ana").status_code == 404
    assert client.get(f"{BASE}/players/leo").json()["total"] == 4
    around = client.get(f"{BASE}/players/zed/around", {"r": 1}).json()["entries"]
    assert [(e["player_id"], e["rank"]) for e in around] == [("leo", 2), ("zed", 4), ("kim", 5)]


def test_every_period_of_a_reset_tournament_freezes_in_order_an_empty_one_too():
    game = make_game()
    start = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=30)
    tournament = cup(
        game, starts_at=start, ends_at=start + timedelta(minutes=10), duration_s=60, reset="*/2 * * * *", grace_s=0
    )
    due = periods_to_freeze(now=timezone.now())
    assert [index for _, index in due] == [1, 2, 3, 4, 5]
    assert tournaments_freeze() == 5
    assert list(TournamentPeriod.objects.order_by("index").values_list("index", flat=True)) == [1, 2, 3, 4, 5]
    assert Event.objects.filter(type=TOURNAMENT_PERIOD_FINAL).count() == 5
    assert not TournamentStanding.objects.exists()
    assert periods_to_freeze(now=timezone.now()) == []
    assert not tournament_period_freeze(tournament_id=tournament.pk, index=6, now=timezone.now())  # no such period


def test_a_period_whose_grace_has_not_ended_is_not_frozen():
    game = make_game()
    tournament = cup(game, grace_s=30)
    assert periods_to_freeze(now=timezone.now()) == []
    assert not tournament_period_freeze(tournament_id=tournament.pk, index=1, now=timezone.now())
    assert not TournamentPeriod.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_freezers_at_the_same_moment_freeze_the_period_once():
    _, _, tournament = closed_cup()
    now = timezone.now()
    barrier = threading.Barrier(4)
    outcomes: list[bool] = []

    def freezer():
        try:
            barrier.wait()
            outcomes.append(tournament_period_freeze(tournament_id=tournament.pk, index=1, now=now))
        finally:
            connection.close()

    threads = [threading.Thread(target=freezer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == [False, False, False, True]
    assert TournamentPeriod.objects.count() == 1
    assert TournamentStanding.objects.count() == 5
    assert Event.objects.filter(type=TOURNAMENT_PERIOD_FINAL).count() == 1


def test_the_admin_links_a_final_period_to_its_standings(client):
    _, _, tournament = closed_cup()
    tournaments_freeze()
    client.force_login(User.objects.create_superuser("op", password="pw"))
    page = client.get(f"/admin/competitions/tournament/{tournament.pk}/change/").content.decode()
    final = TournamentPeriod.objects.get()
    assert f'/admin/competitions/tournamentperiod/{final.pk}/change/">1</a>' in page
    standings = client.get(f"/admin/competitions/tournamentperiod/{final.pk}/change/").content.decode()
    assert "<td>1</td><td>maya</td><td>50</td><td>2</td><td>{&quot;gems&quot;: 500}</td>" in standings
