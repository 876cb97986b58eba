"""The signed events feed, `GET /api/v1/games/{game}/events` (docs/api.md, "Events out"): its pages and
cursor, its filters and window, each refusal's status and code (storing nothing, not even a feed
id), and no event skipped or listed twice when transactions commit out of the order of their ids."""

import random
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from events.models import Delivery, DeliveryAttempt, Event, Webhook
from events.services import events_prune, events_publish, webhook_create
from events.types import PLAYER_BANNED, RESULT_REVIEWED
from scoring.testing import make_game, make_key, signed_get

FEED = "/api/v1/games/arena/events"


def ban_event(game, player: str, **kw) -> int:
    return events_publish(game=game, type=PLAYER_BANNED, data={"player_id": player, "revoked": 0}, **kw)


def feed(client, key, query: str = "") -> dict:
    response = signed_get(client, key, FEED + (f"?{query}" if query else ""))
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.django_db
def test_pages_follow_the_cursor_and_each_event_has_the_contracts_body(client):
    game = make_game("arena")
    key = make_key(game)
    for i in range(7):
        ban_event(game, f"p{i}")
    first = feed(client, key, "limit=3")
    assert [e["id"] for e in first["events"]] == [1, 2, 3] and first["next"] == 3
    event = first["events"][0]
    assert list(event) == ["id", "type", "game", "created_at", "data"]
    assert event["type"] == "player.banned" and event["game"] == "arena"
    assert event["data"] == {"player_id": "p0", "revoked": 0}
    assert event["created_at"].endswith("Z") and len(event["created_at"]) == 20
    assert [e["id"] for e in feed(client, key, "after=3&limit=3")["events"]] == [4, 5, 6]
    last = feed(client, key, "after=6&limit=3")
    assert [e["id"] for e in last["events"]] == [7] and last["next"] == 7
    assert feed(client, key, "after=7") == {"events": [], "next": 7}  # `after` itself on an empty page
    assert feed(client, key, "after=100") == {"events": [], "next": 100}
    assert len(feed(client, key)["events"]) == 7  # defaults: after 0, limit 100


@pytest.mark.django_db
def test_types_filter_and_the_30_day_window(client):
    game = make_game("arena")
    key = make_key(game)
    ban_event(game, "old", now=timezone.now() - timedelta(days=31))
    ban_event(game, "a")
    events_publish(game=game, type=RESULT_REVIEWED, data={"match_id": "m", "player_id": "b", "decision": "revoked"})
    ban_event(game, "c")
    everything = feed(client, key)
    assert [e["id"] for e in everything["events"]] == [2, 3, 4]  # id 1 is 31 days old
    banned = feed(client, key, "types=player.banned")
    assert [e["id"] for e in banned["events"]] == [2, 4] and banned["next"] == 4
    both = feed(client, key, "types=result.reviewed,player.banned,player.banned")
    assert [e["id"] for e in both["events"]] == [2, 3, 4]
    assert feed(client, key, "types=season.frozen") == {"events": [], "next": 0}


@pytest.mark.django_db
def test_each_game_has_its_own_ids(client):
    arena, other = make_game("arena"), make_game("other")
    for game in (arena, other, arena, other, arena):
        ban_event(game, game.slug)
    assert [e["id"] for e in feed(client, make_key(arena))["events"]] == [1, 2, 3]
    response = signed_get(client, make_key(other), "/api/v1/games/other/events")
    assert [(e["id"], e["game"]) for e in response.json()["events"]] == [(1, "other"), (2, "other")]


REFUSALS = [
    # (what, how the request is made, status, code)
    ("no signature", "unsigned", "", 401, "not_authenticated"),
    ("a wrong secret", "wrong", "", 401, "authentication_failed"),
    ("a timestamp 301 s old", "stale", "", 401, "authentication_failed"),
    ("another game's key", "other", "", 403, "permission_denied"),
    ("after below 0", "ok", "after=-1", 400, "invalid"),
    ("after not a number", "ok", "after=abc", 400, "invalid"),
    ("after past 2^63 - 1", "ok", f"after={2**63}", 400, "invalid"),
    ("after a superscript digit", "ok", "after=%C2%B2", 400, "invalid"),
    ("limit 0", "ok", "limit=0", 400, "invalid"),
    ("limit 1001", "ok", "limit=1001", 400, "invalid"),
    ("limit empty", "ok", "limit=", 400, "invalid"),
    ("an unknown type", "ok", "types=season.ended", 400, "invalid"),
    ("types empty", "ok", "types=", 400, "invalid"),
    ("a trailing comma", "ok", "types=player.banned,", 400, "invalid"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("what", "how", "query", "status", "code"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_refused_read_says_why_and_stores_nothing(client, what, how, query, status, code):
    game = make_game("arena")
    key = make_key(game)
    ban_event(game, "maya")
    path = FEED + (f"?{query}" if query else "")
    if how == "unsigned":
        response = client.get(path)
    elif how == "wrong":
        response = signed_get(client, key, path, secret="not-the-secret")
    elif how == "stale":
        response = signed_get(client, key, path, timestamp=int(time.time()) - 301)
    elif how == "other":
        response = signed_get(client, make_key(make_game("other")), path)
    else:
        response = signed_get(client, key, path)
    assert (response.status_code, response.json()["code"]) == (status, code), response.content
    assert Event.objects.get().feed_id is None  # not even numbered


@pytest.mark.django_db
def test_an_unknown_game_is_refused_like_another_games(client):
    key = make_key(make_game("arena"))
    response = signed_get(client, key, "/api/v1/games/no-such-game/events")
    assert (response.status_code, response.json()["code"]) == (403, "permission_denied")
    response = client.post(FEED)
    assert (response.status_code, response.json()["code"]) == (405, "method_not_allowed")


@pytest.mark.django_db
def test_a_rolled_back_change_publishes_nothing(client):
    game = make_game("arena")
    with pytest.raises(RuntimeError), transaction.atomic():
        ban_event(game, "maya")
        raise RuntimeError("the change failed")
    assert feed(client, make_key(game)) == {"events": [], "next": 0}


@pytest.mark.django_db(transaction=True)
def test_an_event_committed_after_a_later_one_is_neither_skipped_nor_repeated(client):
    """One transaction publishes and stays open; a second publishes and commits; the feed lists the
    second; the first commits; the next page lists it. Ids follow the order of the commits."""
    game = make_game("arena")
    key = make_key(game)
    published, release, done = threading.Event(), threading.Event(), threading.Event()

    def slow() -> None:
        try:
            with transaction.atomic():
                ban_event(game, "first-published")
                published.set()
                release.wait(10)
        finally:
            connection.close()
            done.set()

    threading.Thread(target=slow).start()
    assert published.wait(10)
    with connection.cursor() as cursor:  # the open transaction's event has the lower primary key
        cursor.execute("SELECT last_value FROM events_event_id_seq")
        open_pk = cursor.fetchone()[0]
    later_pk = ban_event(game, "committed-first")
    assert later_pk > open_pk
    page = feed(client, key)
    assert [(e["id"], e["data"]["player_id"]) for e in page["events"]] == [(1, "committed-first")]
    release.set()
    assert done.wait(10)
    after = feed(client, key, f"after={page['next']}")
    assert [(e["id"], e["data"]["player_id"]) for e in after["events"]] == [(2, "first-published")]
    assert [e["id"] for e in feed(client, key)["events"]] == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_a_reader_following_the_feed_while_publishers_commit_out_of_order_sees_each_event_once(client):
    game = make_game("arena")
    key = make_key(game)
    writers, per_writer = 6, 15
    stop = threading.Event()

    def write(w: int) -> None:
        rng = random.Random(w)
        try:
            for i in range(per_writer):
                with transaction.atomic():
                    ban_event(game, f"w{w}-{i}")
                    time.sleep(rng.random() * 0.02)  # commits land in any order
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    seen: list[tuple[int, str]] = []
    after = 0
    while not stop.is_set():
        alive = any(t.is_alive() for t in threads)
        page = feed(client, key, f"after={after}&limit=7")
        seen += [(e["id"], e["data"]["player_id"]) for e in page["events"]]
        after = page["next"]
        if not alive and not page["events"]:
            stop.set()
    ids = [i for i, _ in seen]
    assert ids == list(range(1, writers * per_writer + 1))  # increasing, none skipped, none twice
    assert sorted(p for _, p in seen) == sorted(f"w{w}-{i}" for w in range(writers) for i in range(per_writer))


@pytest.mark.django_db
def test_the_prune_drops_what_left_the_window_with_its_deliveries():
    game = make_game("arena")
    hook = webhook_create(game=game, url="http://127.0.0.1:9/hook")
    old = ban_event(game, "old", now=timezone.now() - timedelta(days=30, minutes=1))
    kept = ban_event(game, "new", now=timezone.now() - timedelta(days=29))
    delivery = Delivery.objects.get(event_id=old)
    DeliveryAttempt.objects.create(delivery=delivery, at=timezone.now(), latency_ms=3, status_code=500)
    assert events_prune(now=timezone.now(), batch=1) == 1
    assert list(Event.objects.values_list("id", flat=True)) == [kept]
    assert list(Delivery.objects.values_list("event_id", flat=True)) == [kept]
    assert not DeliveryAttempt.objects.exists() and Webhook.objects.get() == hook
