"""The tournament contract's writes and reads of tournaments and periods (docs/api.md,
"Tournaments"): create, replace, change after the start, end, entry, their statuses and codes."""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from anticheat.testing import make_key
from common.formats import iso
from common.redis import boards_client
from competitions import keys
from competitions.models import Tournament, TournamentEntrant
from competitions.services import entrant_join
from competitions.testing import cup_body, signed_call
from seasons.testing import make_game

pytestmark = pytest.mark.django_db

BASE = "/api/v1/games/arena/tournaments"


@pytest.fixture
def key():
    return make_key(make_game("arena"))


def test_create_then_same_body_then_replace_before_the_start(client, key):
    later = timezone.now().replace(microsecond=0) + timedelta(days=1)
    body = cup_body(starts_at=later, max_entrants=1000, rewards=[{"rank_from": 1, "rank_to": 1, "reward": {"gems": 5}}])
    created = signed_call(client, key, "PUT", f"{BASE}/spring-cup", body)
    assert created.status_code == 201
    answer = created.json()
    assert answer["id"] == "spring-cup"
    assert answer["ends_at"] == iso(later + timedelta(hours=1))  # starts_at + duration_s without a reset
    assert (answer["scoring"], answer["order"], answer["reset"], answer["grace_s"]) == ("best", "desc", None, 60)
    assert answer["period"] == {
        "index": 1,
        "starts_at": iso(later),
        "ends_at": iso(later + timedelta(hours=1)),
        "status": "upcoming",
        "entrants": 0,
    }
    assert answer["next_period_starts_at"] == iso(later)
    assert answer["can_enter"] is True
    again = signed_call(client, key, "PUT", f"{BASE}/spring-cup", body)
    assert (again.status_code, again.json()) == (200, answer)
    replaced = signed_call(client, key, "PUT", f"{BASE}/spring-cup", {**body, "scoring": "sum", "max_attempts": 3})
    assert replaced.status_code == 200
    assert (replaced.json()["scoring"], replaced.json()["max_attempts"]) == ("sum", 3)
    assert Tournament.objects.count() == 1
    assert client.get(f"{BASE}/spring-cup").json() == replaced.json()


def test_after_the_start_only_title_description_metadata_and_ends_at_change(client, key):
    body = cup_body(reset="* * * * *", ends_at=timezone.now() + timedelta(days=3))
    assert signed_call(client, key, "PUT", f"{BASE}/daily", body).status_code == 201
    refused = signed_call(client, key, "PUT", f"{BASE}/daily", {**body, "max_attempts": 5})
    assert (refused.status_code, refused.json()["code"]) == (409, "tournament_started")
    assert Tournament.objects.get().max_attempts is None
    later_end = iso(timezone.now() + timedelta(days=9))
    changed = signed_call(client, key, "PUT", f"{BASE}/daily", {**body, "title": "Daily", "ends_at": later_end})
    assert (changed.status_code, changed.json()["title"], changed.json()["ends_at"]) == (200, "Daily", later_end)
    past = signed_call(client, key, "PUT", f"{BASE}/daily", {**body, "ends_at": iso(timezone.now() - timedelta(1))})
    assert (past.status_code, past.json()["code"]) == (400, "invalid")
    assert "ends_at" in past.json()
    assert Tournament.objects.get().ends_at.isoformat().startswith(later_end[:10])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"title": None}, "title"),
        ({"duration_s": 59}, "duration_s"),
        ({"duration_s": "3600"}, "duration_s"),
        ({"category": 128}, "category"),
        ({"category": True}, "category"),
        ({"scoring": "max"}, "scoring"),
        ({"order": "up"}, "order"),
        ({"reset": "every friday"}, "reset"),
        ({"max_entrants": 0}, "max_entrants"),
        ({"max_attempts": 2.0}, "max_attempts"),
        ({"metadata": {"x": "y" * 5000}}, "metadata"),
        ({"metadata": []}, "metadata"),
        (
            {"rewards": [{"rank_from": 1, "rank_to": 3, "reward": {}}, {"rank_from": 3, "rank_to": 4, "reward": {}}]},
            "rewards",
        ),
        ({"rewards": [{"rank_from": 0, "rank_to": 1, "reward": {}}]}, "rewards"),
        ({"starts_at": "2026-12-05 18:00"}, "starts_at"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_malformed_configuration_is_a_400_and_stores_nothing(client, key, change, field):
    response = signed_call(client, key, "PUT", f"{BASE}/cup", {**cup_body(), **change})
    assert (response.status_code, response.json()["code"]) == (400, "invalid")
    assert field in response.json()
    assert not Tournament.objects.exists()


def test_a_window_that_holds_no_period_is_a_400(client, key):
    start = timezone.now() + timedelta(hours=1)
    # Daily at 18:00, but the window closes before the first fire.
    body = cup_body(
        starts_at=start.replace(hour=18, minute=0, second=0, microsecond=0) + timedelta(minutes=1),
        reset="0 18 * * *",
        ends_at=start.replace(hour=18, minute=0) + timedelta(hours=2),
    )
    response = signed_call(client, key, "PUT", f"{BASE}/cup", body)
    assert (response.status_code, response.json()["code"]) == (400, "invalid")
    assert not Tournament.objects.exists()
    assert signed_call(client, key, "PUT", f"{BASE}/Bad_Id", cup_body()).status_code == 400


def test_unsigned_and_unknown_are_refused(client, key):
    assert client.put(f"{BASE}/cup", data="{}", content_type="application/json").status_code == 401
    missing = client.get(f"{BASE}/nope")
    assert (missing.status_code, missing.json()["code"]) == (404, "unknown_tournament")
    ended = signed_call(client, key, "POST", f"{BASE}/nope/end")
    assert (ended.status_code, ended.json()["code"]) == (404, "unknown_tournament")
    joined = signed_call(client, key, "PUT", f"{BASE}/nope/entrants/maya")
    assert (joined.status_code, joined.json()["code"]) == (404, "unknown_tournament")


def test_entry_is_per_period_capacity_is_exact_and_end_stops_it(client, key):
    assert signed_call(client, key, "PUT", f"{BASE}/cup", cup_body(max_entrants=2)).status_code == 201
    first = signed_call(client, key, "PUT", f"{BASE}/cup/entrants/maya")
    assert first.status_code == 201
    assert first.json()["period"]["index"] == 1
    assert first.json()["period"]["entrants"] == 1
    assert signed_call(client, key, "PUT", f"{BASE}/cup/entrants/maya").status_code == 200
    assert signed_call(client, key, "PUT", f"{BASE}/cup/entrants/leo").status_code == 201
    full = signed_call(client, key, "PUT", f"{BASE}/cup/entrants/ana")
    assert (full.status_code, full.json()["code"]) == (409, "tournament_full")
    assert sorted(TournamentEntrant.objects.values_list("player_id", flat=True)) == ["leo", "maya"]
    shown = client.get(f"{BASE}/cup").json()
    assert (shown["period"]["entrants"], shown["can_enter"]) == (2, False)

    ended = signed_call(client, key, "POST", f"{BASE}/cup/end")
    assert ended.status_code == 200
    assert ended.json()["period"]["status"] == "grace"
    assert ended.json()["next_period_starts_at"] is None
    over = signed_call(client, key, "PUT", f"{BASE}/cup/entrants/zed")
    assert (over.status_code, over.json()["code"]) == (409, "tournament_over")


def test_the_seat_counter_is_filled_from_the_database_after_redis_lost_it(client, key):
    assert signed_call(client, key, "PUT", f"{BASE}/cup", cup_body(max_entrants=2)).status_code == 201
    assert signed_call(client, key, "PUT", f"{BASE}/cup/entrants/maya").status_code == 201
    assert signed_call(client, key, "PUT", f"{BASE}/cup/entrants/leo").status_code == 201
    boards_client().flushall()
    full = signed_call(client, key, "PUT", f"{BASE}/cup/entrants/ana")
    assert (full.status_code, full.json()["code"]) == (409, "tournament_full")
    assert boards_client().scard(keys.entrants_key("arena", "cup", 1)) == 3  # two players and the mark


def test_between_periods_a_join_enters_the_next_one_and_periods_list_newest_first(client, key):
    now = timezone.now().replace(second=0, microsecond=0)
    # Every minute, 60 s long: the current minute is period K, the next one K + 1.
    body = cup_body(starts_at=now - timedelta(minutes=3), reset="* * * * *", duration_s=60, grace_s=0)
    assert signed_call(client, key, "PUT", f"{BASE}/minutely", body).status_code == 201
    periods = client.get(f"{BASE}/minutely/periods").json()["periods"]
    assert [p["index"] for p in periods][-4:] == [4, 3, 2, 1]
    assert periods[-1]["starts_at"] == iso(now - timedelta(minutes=3))
    assert [p["index"] for p in periods] == sorted((p["index"] for p in periods), reverse=True)


@pytest.mark.django_db(transaction=True)
def test_200_concurrent_joins_on_150_seats_enter_exactly_150():
    game = make_game("arena")
    make_key(game)
    start = timezone.now() - timedelta(seconds=60)
    cup = Tournament.objects.create(
        game=game,
        slug="cup",
        title="Cup",
        starts_at=start,
        ends_at=start + timedelta(hours=1),
        duration_s=3600,
        max_entrants=150,
        created_at=start,
    )

    def join(i: int) -> str:
        try:
            entrant_join(tournament=cup, player_id=f"p{i}", now=timezone.now())
            return "in"
        except Exception as exc:  # the 409's ApiError
            return getattr(exc, "code", repr(exc))
        finally:
            connection.close()

    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(join, range(200)))
    assert outcomes.count("in") == 150, sorted(set(outcomes))
    assert outcomes.count("tournament_full") == 50
    assert TournamentEntrant.objects.filter(tournament=cup, period=1).count() == 150
