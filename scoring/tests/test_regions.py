"""Regions: fixed for a season by the first ranked result; a moderator can move a player."""

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from anticheat.models import AuditEntry
from boards.models import SeasonRegion
from scoring.models import ScoreEvent
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db


def submit(game, key, region):
    result = {"player_id": "amy", "points": 10, **({"region": region} if region else {})}
    return submit_direct(game, key, match_body([result]), now=timezone.now())


def test_the_first_ranked_result_fixes_the_region_for_the_season(client):
    game = make_game()
    key = make_key(game)
    submit(game, key, None)  # no region yet: global only
    submit(game, key, "eu")  # the first result with a region fixes it
    submit(game, key, "na")  # later regions count in the original one
    drain()
    assert list(ScoreEvent.objects.order_by("id").values_list("region", "requested_region")) == [
        (None, None),
        ("eu", None),
        ("eu", "na"),  # the ledger records the rule applied: na was asked, eu counted
    ]
    base = "/api/v1/games/arena/boards/all"
    assert client.get(f"{base}/players/amy").json()["score"] == 30
    assert client.get(f"{base}/players/amy?region=eu").json()["score"] == 20
    assert client.get(f"{base}/players/amy?region=na").json()["code"] == "not_ranked"


def test_a_moderator_moves_a_player_between_regions(client):
    game = make_game()
    key = make_key(game)
    submit(game, key, "eu")
    submit(game, key, "eu")
    drain()
    admin = User.objects.create_superuser("root", password="pw")
    client.force_login(admin)
    row = SeasonRegion.objects.get(player_id="amy")
    response = client.post(
        "/admin/boards/seasonregion/",
        {"action": "move_region", "_selected_action": [row.pk], "confirm": "yes", "region": "na", "reason": "moved"},
    )
    assert response.status_code == 302
    base = "/api/v1/games/arena/boards/all"
    assert client.get(f"{base}/players/amy?region=na").json()["score"] == 20
    assert client.get(f"{base}/players/amy?region=eu").json()["code"] == "not_ranked"
    assert client.get(f"{base}/players/amy").json()["score"] == 20
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert AuditEntry.objects.get(action="move_region").reason == "eu -> na: moved"
    assert submit(game, key, "eu").body["results"][0]["status"] == "accepted"
    drain()
    assert client.get(f"{base}/players/amy?region=na").json()["score"] == 30  # fixed to na now


def test_the_game_lists_a_region_from_its_first_result_on(client, django_capture_on_commit_callbacks):
    """The regions of `/games/{game}` (and the page's picker) come from a Redis copy of the regions
    table: built by the first read, added to when a result fixes a new region (after its commit),
    and built anew when it has expired (a region whose players all left goes)."""
    from boards import selectors
    from boards.keys import regions_key
    from common.redis import client as redis_client

    game = make_game()
    key = make_key(game)
    with django_capture_on_commit_callbacks(execute=True):
        submit(game, key, "eu")
    assert client.get("/api/v1/games/arena").json()["regions"] == ["global", "eu"]  # built from the table
    with django_capture_on_commit_callbacks(execute=True):
        submit_direct(game, key, match_body([{"player_id": "bo", "points": 1, "region": "asia"}]), now=timezone.now())
    assert client.get("/api/v1/games/arena").json()["regions"] == ["global", "asia", "eu"]  # added on commit
    SeasonRegion.objects.filter(region="asia").delete()
    season = game.seasons.get()
    assert redis_client().ttl(regions_key("arena", season.id)) <= selectors.REGIONS_TTL_S
    redis_client().delete(regions_key("arena", season.id))  # as when it expires
    assert client.get("/api/v1/games/arena").json()["regions"] == ["global", "eu"]
