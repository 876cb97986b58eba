"""A league's signed PUT and its read (docs/api.md, "Leagues"): create, the same body, replace
before the start, only the title after it (409 `league_started`), every refusal a 400 that stores
nothing, and the admin's pages."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from anticheat.testing import make_key
from common.formats import iso
from competitions.league_models import League
from competitions.testing import league_body, signed_call
from seasons.testing import make_game

pytestmark = pytest.mark.django_db

BASE = "/api/v1/games/arena/leagues"


@pytest.fixture
def key():
    return make_key(make_game("arena"))


def test_create_then_same_body_then_replace_before_the_start(client, key):
    later = timezone.now().replace(second=0, microsecond=0) + timedelta(days=1)
    body = league_body(starts_at=later, reset="0 0 * * *")
    created = signed_call(client, key, "PUT", f"{BASE}/weekly", body)
    assert created.status_code == 201, created.json()
    answer = created.json()
    assert answer["id"] == "weekly"
    assert (answer["cohort_size"], answer["scoring"], answer["demote_idle"]) == (30, "sum", False)
    # The first period runs from the start to the first fire after it (midnight).
    first_fire = (later + timedelta(days=1)).replace(hour=0, minute=0) if later.hour or later.minute else later
    assert answer["period"]["index"] == 1
    assert answer["period"]["starts_at"] == iso(later)
    assert answer["period"]["ends_at"] == iso(first_fire if first_fire > later else later + timedelta(days=1))
    assert answer["period"]["status"] == "upcoming"
    assert answer["divisions"][1] == {"name": "silver", "promote": 7, "demote": 5, "players": 0, "cohorts": 0}
    again = signed_call(client, key, "PUT", f"{BASE}/weekly", body)
    assert (again.status_code, again.json()) == (200, answer)
    replaced = signed_call(client, key, "PUT", f"{BASE}/weekly", {**body, "cohort_size": 50, "scoring": "best"})
    assert replaced.status_code == 200
    assert (replaced.json()["cohort_size"], replaced.json()["scoring"]) == (50, "best")
    assert League.objects.count() == 1
    assert client.get(f"{BASE}/weekly").json() == replaced.json()


def test_after_the_start_only_the_title_changes(client, key):
    body = league_body()
    assert signed_call(client, key, "PUT", f"{BASE}/weekly", body).status_code == 201
    for change in ({"cohort_size": 20}, {"demote_idle": True}, {"reset": "0 * * * *"}, {"scoring": "best"}):
        refused = signed_call(client, key, "PUT", f"{BASE}/weekly", {**body, **change})
        assert (refused.status_code, refused.json()["code"]) == (409, "league_started"), change
    assert League.objects.get().cohort_size == 30
    renamed = signed_call(client, key, "PUT", f"{BASE}/weekly", {**body, "title": "Weekly"})
    assert (renamed.status_code, renamed.json()["title"]) == (200, "Weekly")
    assert client.get(f"{BASE}/weekly").json()["period"]["status"] == "active"


def _divisions(*triples):
    return [{"name": n, "promote": p, "demote": d} for n, p, d in triples]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"title": None}, "title"),
        ({"title": ""}, "title"),
        ({"starts_at": "yesterday"}, "starts_at"),
        ({"reset": None}, "reset"),
        ({"reset": "0 0 * *"}, "reset"),
        ({"reset": "0 0 30 2 *"}, "reset"),
        ({"cohort_size": 1}, "cohort_size"),
        ({"cohort_size": 1001}, "cohort_size"),
        ({"cohort_size": "30"}, "cohort_size"),
        ({"cohort_size": 30.0}, "cohort_size"),
        ({"cohort_size": True}, "cohort_size"),
        ({"scoring": "latest"}, "scoring"),
        ({"demote_idle": 1}, "demote_idle"),
        ({"divisions": _divisions(("bronze", 0, 0))}, "divisions"),
        ({"divisions": _divisions(*[(f"d{i}", 1 if i < 20 else 0, 1 if i else 0) for i in range(21)])}, "divisions"),
        ({"divisions": _divisions(("bronze", 1, 1), ("gold", 0, 1))}, "divisions"),  # the lowest demotes
        ({"divisions": _divisions(("bronze", 1, 0), ("gold", 1, 1))}, "divisions"),  # the highest promotes
        ({"divisions": _divisions(("bronze", 1, 0), ("bronze", 0, 1))}, "divisions"),
        ({"divisions": _divisions(("Bronze", 1, 0), ("gold", 0, 1))}, "divisions"),
        ({"divisions": _divisions(("bronze", 1, 0), ("silver", 20, 11), ("gold", 0, 1))}, "divisions"),
        ({"divisions": _divisions(("bronze", -1, 0), ("gold", 0, 1))}, "divisions"),
        ({"divisions": [{"name": "bronze", "promote": 1}, {"name": "gold", "promote": 0, "demote": 1}]}, "divisions"),
        ({"divisions": "bronze,gold"}, "divisions"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_configuration_is_a_400_naming_its_field_and_stores_nothing(client, key, change, field):
    body = {**league_body(), **change}
    response = signed_call(client, key, "PUT", f"{BASE}/weekly", body)
    assert (response.status_code, response.json()["code"]) == (400, "invalid"), response.json()
    assert field in response.json()
    assert not League.objects.exists()


def test_promote_plus_demote_may_equal_the_cohort_size_and_defaults_apply(client, key):
    body = league_body(cohort_size=10, divisions=_divisions(("bronze", 10, 0), ("silver", 4, 6), ("gold", 0, 10)))
    del body["scoring"], body["demote_idle"]
    created = signed_call(client, key, "PUT", f"{BASE}/weekly", body)
    assert created.status_code == 201, created.json()
    assert (created.json()["scoring"], created.json()["demote_idle"]) == ("sum", False)


def test_bad_ids_unknown_leagues_and_signatures(client, key):
    assert signed_call(client, key, "PUT", f"{BASE}/Weekly!", league_body()).status_code in (400, 404)
    unknown = client.get(f"{BASE}/nope")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "unknown_league")
    unsigned = client.put(f"{BASE}/weekly", data=league_body(), content_type="application/json")
    assert unsigned.status_code == 401
    other = make_key(make_game("other"))
    assert signed_call(client, other, "PUT", f"{BASE}/weekly", league_body()).status_code == 403
    assert not League.objects.exists()


def test_the_admin_defines_a_league_and_shows_its_divisions(client, key):
    admin = User.objects.create_superuser("root", password="pw")
    client.force_login(admin)
    form = {
        "game": key.game.pk,
        "slug": "weekly",
        "title": "Weekly",
        "starts_at_0": "2030-01-07",
        "starts_at_1": "00:00:00",
        "reset": "0 0 * * 1",
        "cohort_size": "30",
        "scoring": "sum",
        "divisions": '[{"name": "bronze", "promote": 10, "demote": 0}, {"name": "gold", "promote": 0, "demote": 5}]',
    }
    response = client.post("/admin/competitions/league/add/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    league = League.objects.get()
    assert league.division_names == ["bronze", "gold"]
    page = client.get(f"/admin/competitions/league/{league.pk}/change/")
    assert page.status_code == 200 and b"bronze" in page.content
    bad = client.post("/admin/competitions/league/add/", {**form, "slug": "bad", "divisions": "[]"})
    assert bad.status_code == 200 and not League.objects.filter(slug="bad").exists()
    assert client.get("/admin/competitions/leaguecohort/").status_code == 200
    assert client.get("/admin/competitions/leagueperiod/").status_code == 200
