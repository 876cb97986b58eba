"""Ledger to boards: the Lua writer fed from the ledger against real Redis, at most once,
order-independent, equal to the ledger; the outbox; rebuilds."""

import random
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from boards import keys
from boards.writer import EventRow, events_apply
from common.redis import client as redis_client
from scoring.models import ScoreEvent, SeasonTotal
from scoring.outbox import events_apply_by_id
from scoring.rebuild import boards_rebuild
from scoring.selectors import boards_diff
from scoring.testing import (
    drain,
    event_rows,
    make_game,
    make_key,
    match_body,
    outbox_clear,
    outbox_restore,
    submit_direct,
    unapplied,
)

pytestmark = pytest.mark.django_db


def seed_random(game, key, matches=60, players=15, seed=3):
    rng = random.Random(seed)
    start = timezone.now() - timedelta(days=3)
    for _ in range(matches):
        played = start + timedelta(hours=rng.randint(0, 70))
        chosen = rng.sample([f"p{n}" for n in range(players)], rng.randint(1, 4))
        results = [
            {"player_id": p, "points": rng.choice([0, 0, rng.randint(1, 500)]), "region": rng.choice(["eu", "na"])}
            for p in chosen
        ]
        submit_direct(
            game, key, match_body(results, played), now=start + timedelta(hours=71, seconds=rng.randint(0, 50))
        )


def rows():
    return event_rows(ScoreEvent.objects.all())


@pytest.mark.parametrize("rule", ["competition", "dense", "first"])
def test_any_order_with_redeliveries_equals_the_ledger(rule):
    game = make_game(tie_rule=rule, start=timezone.now() - timedelta(days=5))
    seed_random(game, make_key(game))
    events = rows()
    shuffled = events + random.Random(1).sample(events, len(events) // 2)
    random.Random(2).shuffle(shuffled)
    for start in range(0, len(shuffled), 7):
        events_apply(events=shuffled[start : start + 7], dedup_ttl_s=600)
    assert boards_diff(game=game, now=timezone.now()) == {}


def test_dense_companion_counts_distinct_points(client):
    game = make_game(tie_rule="dense")
    key = make_key(game)
    for player, points in [("a", 5), ("b", 5), ("c", 3)]:
        submit_direct(game, key, match_body([{"player_id": player, "points": points}]), now=timezone.now())
    drain()
    assert client.get("/api/v1/games/arena/boards/all/players/c").json()["rank"] == 2
    submit_direct(game, key, match_body([{"player_id": "c", "points": 4}]), now=timezone.now())
    drain()
    # c moved from 3 to 7: the distinct value 3 is gone, 7 is new; a and b now share rank 2.
    assert client.get("/api/v1/games/arena/boards/all/players/a").json()["rank"] == 2
    companion = keys.BoardRef("arena", game.seasons.get().id, "all").distinct_key
    assert redis_client().zrange(companion, 0, -1) == ["5", "7"]


def test_a_marker_another_event_left_under_the_same_id_does_not_skip_this_one():
    """A restored ledger (or a new database on the same Redis) reuses row ids: the marker an
    earlier event left under this id is not this event's, so it is applied; its own marker, left
    by a crash before the applied flag, still stops a second apply."""
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "a", "points": 5}]), now=timezone.now())
    event = ScoreEvent.objects.get()
    dkey, field = keys.dedup_location(event.id)
    other = keys.dedup_tag(event.id, event.accepted_at - timedelta(days=1))  # before the restore
    redis_client().hset(dkey, field, other)
    redis_client().hset(*keys.dedup_location(event.id + 1), "1")  # a marker from before tags
    report = events_apply_by_id(event_ids=[event.id], dedup_ttl_s=600)
    assert (report.applied, report.skipped) == (1, 0)
    assert redis_client().hget(dkey, field) == keys.dedup_tag(event.id, event.accepted_at)
    ref = keys.BoardRef("arena", game.seasons.get().id, "all")
    assert redis_client().zscore(ref.key, "a") is not None
    outbox_restore(ScoreEvent.objects.all())
    assert events_apply_by_id(event_ids=[event.id], dedup_ttl_s=600).skipped == 1
    assert boards_diff(game=game, now=timezone.now()) == {}


def test_dedup_tags_differ_by_event_and_fit_a_listpack_integer():
    now = timezone.now()
    tags = {keys.dedup_tag(7, now + timedelta(microseconds=n)) for n in range(1000)}
    assert len(tags) == 1000
    assert all(-(1 << 31) <= int(t) < (1 << 31) and t != "1" for t in tags)
    assert keys.dedup_tag(7, now) == keys.dedup_tag(7, now)
    assert keys.dedup_tag(7, now) != keys.dedup_tag(8, now)


def test_a_crash_between_lua_and_the_outbox_delete_does_not_count_twice():
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "a", "points": 5}]), now=timezone.now())
    ids = list(ScoreEvent.objects.values_list("id", flat=True))
    events_apply_by_id(event_ids=ids, dedup_ttl_s=600)
    outbox_restore(ScoreEvent.objects.all())  # as if the worker died before deleting the outbox rows
    report = events_apply_by_id(event_ids=ids, dedup_ttl_s=600)
    assert (report.applied, report.skipped) == (0, 1)
    assert unapplied().count() == 0
    ref = keys.BoardRef("arena", game.seasons.get().id, "all")
    assert redis_client().zcard(ref.key) == 1
    assert boards_diff(game=game, now=timezone.now()) == {}


def test_day_and_week_boards_expire_season_boards_do_not():
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "a", "points": 5}]), now=timezone.now())
    drain()
    client = redis_client()
    ttls = {k.split(":")[4]: client.ttl(k) for k in client.scan_iter(match=keys.board_pattern("arena"))}
    assert ttls["all"] == -1 and ttls["best"] == -1
    assert 8 * 86400 <= ttls["daily"] <= 9 * 86400
    assert 14 * 86400 <= ttls["weekly"] <= 15 * 86400
    assert 35 * 86400 <= ttls["monthly"] <= 36 * 86400


def test_a_paused_game_applies_nothing_until_resumed():
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "a", "points": 5}]), now=timezone.now())
    client = redis_client()
    client.set(keys.pause_key("arena"), "1")
    ids = list(ScoreEvent.objects.values_list("id", flat=True))
    assert events_apply_by_id(event_ids=ids, dedup_ttl_s=600).paused == 1
    assert unapplied().count() == 1
    client.delete(keys.pause_key("arena"))
    assert events_apply_by_id(event_ids=ids, dedup_ttl_s=600).applied == 1


def test_an_overflowing_event_is_refused_by_the_script_before_any_write():
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "a", "points": 5}]), now=timezone.now())
    [event] = rows()
    huge = EventRow(event.id + 1000, event.season_id, "a", 2**31, event.accepted_at, event.day, None)
    report = events_apply(events=[event, huge], dedup_ttl_s=600)
    assert (report.applied, report.refused) == (1, [huge.id])
    assert redis_client().zscore(keys.BoardRef("arena", event.season_id, "all").key, "a") is not None


def test_season_total_past_the_exact_capacity_is_rejected_at_submission():
    game = make_game(max_points=2**31)
    key = make_key(game)
    first = submit_direct(game, key, match_body([{"player_id": "a", "points": 2**29}]), now=timezone.now())
    second_id = uuid.uuid4()
    body = match_body([{"player_id": "a", "points": 2**29}, {"player_id": "b", "points": 3}])
    second = submit_direct(game, key, body, now=timezone.now(), match_id=second_id)
    assert first.body["results"][0]["status"] == "accepted"
    assert second.body["results"] == [
        {"player_id": "a", "status": "rejected", "reason": "score_overflow"},
        {"player_id": "b", "status": "accepted"},
    ]
    # The stored answer (what a resend replays) and the ledger say the same.
    replay = submit_direct(game, key, body, now=timezone.now(), match_id=second_id)
    assert (replay.http_status, replay.body) == (200, second.body)
    assert ScoreEvent.objects.get(match_id=second_id, player_id="a").status == "rejected"
    assert SeasonTotal.objects.get(player_id="a").points == 2**29
    drain()
    assert boards_diff(game=game, now=timezone.now()) == {}


@pytest.mark.parametrize("rule", ["competition", "dense"])
def test_rebuild_after_flushall_restores_every_board_exactly(client, rule):
    game = make_game(tie_rule=rule, start=timezone.now() - timedelta(days=5))
    seed_random(game, make_key(game))
    drain()
    before = client.get("/api/v1/games/arena/boards/all/top?n=50").json()["entries"]
    redis_client().flushall()
    assert boards_diff(game=game, now=timezone.now()) != {}
    report = boards_rebuild(game=game)
    assert report.boards > 0
    assert boards_diff(game=game, now=timezone.now()) == {}
    from boards.selectors import top_cache

    top_cache.clear()
    assert client.get("/api/v1/games/arena/boards/all/top?n=50").json()["entries"] == before


def test_rebuild_takes_in_unapplied_events_and_they_are_not_counted_again():
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "a", "points": 5}]), now=timezone.now())
    drain()
    submit_direct(game, key, match_body([{"player_id": "a", "points": 7}]), now=timezone.now())
    report = boards_rebuild(game=game)
    assert report.marked_applied == 1
    ids = list(ScoreEvent.objects.values_list("id", flat=True))
    outbox_restore(ScoreEvent.objects.all())  # a queued task for them arrives after the swap
    events_apply_by_id(event_ids=ids, dedup_ttl_s=600)
    assert boards_diff(game=game, now=timezone.now()) == {}


def test_a_rebuild_gives_the_boards_new_versions_so_no_cached_answer_outlives_it(client):
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "a", "points": 5}]), now=timezone.now())
    drain()
    assert [e["player_id"] for e in client.get("/api/v1/games/arena/boards/all/top").json()["entries"]] == ["a"]
    # A result the ledger holds as applied but Redis lost (a failover): the boards drifted.
    submit_direct(game, key, match_body([{"player_id": "b", "points": 9}]), now=timezone.now())
    outbox_clear(ScoreEvent.objects.filter(player_id="b"))
    assert [e["player_id"] for e in client.get("/api/v1/games/arena/boards/all/top").json()["entries"]] == ["a"]
    boards_rebuild(game=game)
    top = client.get("/api/v1/games/arena/boards/all/top").json()["entries"]
    assert [e["player_id"] for e in top] == ["b", "a"]  # the cached answer went with the old content
    assert client.get("/api/v1/games/arena/boards/all/distribution").json()["total"] == 2
