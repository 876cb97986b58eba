"""Season lifecycle: end_season, grace, freeze into standings, reads after the keys are gone."""

import io
import itertools
import json
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from boards import keys
from boards.models import FrozenStanding
from boards.standings import season_archive
from common.redis import client as redis_client
from scoring.freezing import season_freeze
from scoring.tasks import seasons_freeze
from scoring.testing import drain, make_game, make_key, match_body, result_path, signed_post, submit_direct
from seasons.models import Season, SeasonPointer
from seasons.selectors import seasons_to_freeze

pytestmark = pytest.mark.django_db


def end_season(*args: str) -> dict:
    out = io.StringIO()
    call_command("end_season", *args, stdout=out)
    return json.loads(out.getvalue())


def seed(game, key, rule_rows, played_at):
    for i, (player, points) in enumerate(rule_rows):
        outcome = submit_direct(
            game,
            key,
            match_body([{"player_id": player, "points": points, "region": "eu"}], played_at),
            now=played_at + timedelta(seconds=5 + i),
        )
        assert outcome.http_status == 202


ROWS = [("bob", 90), ("amy", 90), ("cat", 40), ("dan", 40), ("eve", 10)]


@pytest.mark.parametrize("rule", ["competition", "dense", "first"])
def test_end_season_with_no_grace_freezes_and_reads_survive_the_keys(client, rule):
    start = timezone.now() - timedelta(days=3)
    game = make_game(tie_rule=rule, start=start)
    key = make_key(game)
    seed(game, key, ROWS, timezone.now() - timedelta(hours=2))
    drain()
    old = game.seasons.get()
    paths = [
        "boards/all/top?n=10",
        "boards/all/top?n=10&region=eu",
        "boards/best/top?n=3",
        "boards/all/players/cat",
        "boards/all/players/dan/around?r=1",
        "boards/all/players/eve/around?r=1",
    ]
    base = "/api/v1/games/arena/"
    live = {
        p: client.get(f"{base}{p}&season={old.id}" if "?" in p else f"{base}{p}?season={old.id}").json() for p in paths
    }

    answer = end_season("arena", "--grace-s", "0")
    assert answer["season"] == old.id and answer["status"] == "frozen" and answer["next"] != old.id
    old.refresh_from_db()
    assert old.frozen_at is not None
    assert FrozenStanding.objects.filter(season=old, board="all", region="global").count() == len(ROWS)

    # Late results for the frozen season are refused; new ones land in the next season.
    late = signed_post(
        client,
        key,
        result_path(game, uuid.uuid4()),
        match_body([{"player_id": "zed", "points": 5}], timezone.now() - timedelta(hours=1)),
    )
    assert (late.status_code, late.json()["code"]) == (409, "season_closed")
    fresh = signed_post(client, key, result_path(game, uuid.uuid4()), match_body([{"player_id": "zed", "points": 5}]))
    assert fresh.status_code == 202

    redis_client().flushall()  # the old season's keys are gone
    for p in paths:
        url = f"{base}{p}&season={old.id}" if "?" in p else f"{base}{p}?season={old.id}"
        assert client.get(url).json() == live[p], p
    seasons = client.get(f"{base}seasons").json()
    assert seasons["current"] == answer["next"]
    assert {s["id"]: s["status"] for s in seasons["seasons"]} == {old.id: "frozen", answer["next"]: "active"}


def test_end_season_with_grace_takes_stragglers_then_the_beat_freezes_it(client):
    game = make_game(start=timezone.now() - timedelta(days=3))
    key = make_key(game)
    answer = end_season("arena", "--grace-s", "600", "--no-next")
    assert answer["status"] == "grace" and answer["next"] is None
    season = Season.objects.get(pk=answer["season"])
    played = season.ends_at - timedelta(minutes=5)
    late = signed_post(
        client, key, result_path(game, uuid.uuid4()), match_body([{"player_id": "a", "points": 3}], played)
    )
    assert late.status_code == 202
    after_end = signed_post(client, key, result_path(game, uuid.uuid4()), match_body([{"player_id": "a", "points": 3}]))
    assert after_end.json()["code"] == "season_closed"  # no season after the last
    assert seasons_to_freeze(now=timezone.now()) == []
    later = season.closes_at + timedelta(seconds=1)
    assert seasons_to_freeze(now=later) == [season.id]
    Season.objects.filter(pk=season.pk).update(grace_s=0)  # let the beat's clock reach the end of grace
    seasons_freeze()
    season.refresh_from_db()
    assert season.frozen_at is not None
    assert FrozenStanding.objects.get(season=season, board="all", region="global").score == 3


def test_archive_drops_the_keys_and_reads_still_answer(client, django_capture_on_commit_callbacks):
    game = make_game(start=timezone.now() - timedelta(days=3))
    key = make_key(game)
    seed(game, key, ROWS, timezone.now() - timedelta(hours=1))
    drain()
    season = game.seasons.get()
    with django_capture_on_commit_callbacks(execute=True):
        end_season("arena", "--grace-s", "0", "--no-next")
    assert redis_client().ttl(keys.BoardRef("arena", season.id, "all").key) > 0
    season.refresh_from_db()
    assert season_archive(season=season, now=timezone.now())
    assert list(redis_client().scan_iter(match=keys.season_pattern("arena", season.id))) == []
    top = client.get(f"/api/v1/games/arena/boards/all/top?season={season.id}").json()
    assert [e["player_id"] for e in top["entries"]] == [p for p, _ in ROWS]
    assert client.get("/api/v1/games/arena/seasons").json()["seasons"][0]["status"] == "archived"


def test_export_standings_as_csv_and_json_files_and_from_the_admin(client, tmp_path, admin_user):
    game = make_game(start=timezone.now() - timedelta(days=3))
    key = make_key(game)
    seed(game, key, ROWS, timezone.now() - timedelta(hours=1))
    season = game.seasons.get()
    end_season("arena", "--grace-s", "0", "--no-next")
    out = io.StringIO()
    call_command("export_standings", str(season.id), "--dir", str(tmp_path), stdout=out)
    report = json.loads(out.getvalue())
    assert report["rows"] == FrozenStanding.objects.filter(season=season).count()
    lines = (tmp_path / f"arena-season-{season.id}.csv").read_text().splitlines()
    assert lines[0] == "season,board,region,period,rank,player_id,score,tie_rule"
    assert f"{season.id},all,global,-,1,bob,90,competition" in lines
    assert f"{season.id},all,global,-,1,amy,90,competition" in lines
    document = json.loads((tmp_path / f"arena-season-{season.id}.json").read_text())
    assert document["season"] == season.id and len(document["standings"]) == report["rows"]

    client.force_login(admin_user)
    response = client.get(f"/admin/boards/seasonstandings/{season.id}/export/csv/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content).decode().splitlines() == lines


def test_results_at_the_boundary_land_in_the_right_season_and_after_grace_are_409(client):
    from datetime import UTC, datetime

    from seasons.services import season_create

    start = datetime(2026, 11, 1, tzinfo=UTC)
    game = make_game(start=start, days=14)
    first = game.seasons.get()
    second = season_create(game=game, starts_at=first.ends_at, days=14)
    key = make_key(game)
    boundary = first.ends_at

    def land(played, now):
        outcome = submit_direct(game, key, match_body([{"player_id": "amy", "points": 1}], played), now=now)
        if outcome.http_status != 202:
            return outcome.body["code"]
        return ScoreEventModel.objects.order_by("-id").values_list("season_id", flat=True).first()

    from scoring.models import ScoreEvent as ScoreEventModel

    assert land(boundary - timedelta(seconds=1), boundary + timedelta(seconds=5)) == first.id  # a straggler in grace
    assert land(boundary, boundary + timedelta(seconds=5)) == second.id
    after_grace = boundary + timedelta(seconds=first.grace_s + 1)
    assert land(boundary - timedelta(seconds=1), after_grace) == "season_closed"
    assert land(boundary + timedelta(minutes=5), after_grace) == second.id
    metrics = client.get("/metrics").content.decode()
    assert 'leaderboard_refused_total{code="season_closed",game="arena"} 1' in metrics


def test_a_year_of_weekly_seasons_runs_with_nobody_touching_a_key(client):
    """52 weeks of beat ticks on a fake clock: each week a new season starts at Monday 00:00, the
    last one takes stragglers for its grace, then freezes; readers follow the pointer."""
    from datetime import UTC, datetime

    from seasons.services import pointers_advance, seasons_schedule_next

    game = make_game(start=datetime(2026, 1, 5, tzinfo=UTC), days=7)  # a Monday
    game.season_schedule_cron = "0 0 * * 1"
    game.save()
    key = make_key(game)
    clock = datetime(2026, 1, 5, 12, tzinfo=UTC)
    for week in range(52):
        clock += timedelta(days=7)
        seasons_schedule_next(now=clock)
        pointers_advance(now=clock)
        for season_id in seasons_to_freeze(now=clock):
            season_freeze(season_id=season_id, now=clock)
        played = clock - timedelta(hours=1)
        outcome = submit_direct(game, key, match_body([{"player_id": f"w{week}", "points": 1}], played), now=clock)
        assert outcome.http_status == 202
    seasons = list(game.seasons.order_by("starts_at"))
    assert len(seasons) == 53
    assert all(a.ends_at == b.starts_at for a, b in itertools.pairwise(seasons))
    assert all(s.starts_at.weekday() == 0 and s.starts_at.hour == 0 for s in seasons)
    assert sum(1 for s in seasons if s.frozen_at is not None) == 52  # all but the running one (grace is 1 h)
    assert SeasonPointer.objects.get(game=game).season == seasons[-1]  # readers moved along each week
