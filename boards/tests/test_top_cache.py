"""The version-keyed caches of the read path (top N, distribution): a copy is served only after
Redis says the board has not changed since; bounded; cold keys load once however many ask."""

import threading
import time

import pytest
from django.utils import timezone

from boards import selectors
from boards.selectors import Cached, VersionedCache
from boards.testing import record
from boards.writer import names_store
from common.redis import client as redis_client
from common.redis import lua_script
from common.testing import run_together
from seasons.testing import make_game

pytestmark = pytest.mark.django_db


def test_a_top_read_sends_its_version_and_redis_answers_unchanged_until_the_board_changes(client):
    game = make_game()
    record(game, "amy", 10, name="Amy")
    first = client.get("/api/v1/games/arena/boards/all/top?n=10").json()["entries"]
    assert [(e["player_id"], e["display_name"]) for e in first] == [("amy", "Amy")]
    view = selectors.board_view(slug="arena", board="all", region=None, season=None, period=None, now=timezone.now())
    held = selectors.top_cache.peek(selectors.top_key(view, 10))
    assert held is not None and held.body is not None  # the fast path rendered and kept it
    script_keys, args = selectors.top_call(view, 10, held.version)
    assert lua_script(selectors.TOP_SCRIPT)(keys=script_keys, args=args, client=redis_client()) == [held.version]
    record(game, "bob", 20)  # the writer bumps the board's version with the data
    assert [e["player_id"] for e in client.get("/api/v1/games/arena/boards/all/top?n=10").json()["entries"]] == [
        "bob",
        "amy",
    ]
    names_store(game="arena", names={"amy": "Amy Storm"})  # a new names version: the cached top follows
    entries = client.get("/api/v1/games/arena/boards/all/top?n=10").json()["entries"]
    assert entries[1]["display_name"] == "Amy Storm"


def test_the_cache_holds_at_most_its_size():
    cache = VersionedCache(maxsize=8)
    for n in range(1, 101):
        assert cache.get(("board", n), lambda held, n=n: Cached("v1", n)).value == n
    assert len(cache) == 8  # 100 keys asked for: the 8 most recent answers, no load in flight


@pytest.mark.django_db(transaction=True)
def test_a_cold_key_loads_once_however_many_ask_at_the_same_moment():
    cache = VersionedCache()
    loads: list[int] = []
    answers: list[object] = []

    def load(held: Cached | None) -> Cached:
        loads.append(1)
        time.sleep(0.05)
        return Cached("v1", ["top"])

    run_together(lambda _: answers.append(cache.get("board", load).value), 16)
    assert len(answers) == 16 and all(a == ["top"] for a in answers)
    assert len(loads) == 1


def test_a_failed_load_reaches_every_waiter_and_the_next_reader_tries_again():
    cache = VersionedCache()
    key = ("board", 10)
    release = threading.Event()
    errors: list[BaseException] = []

    def failing(held):
        release.wait(5)
        raise ConnectionError("redis is down")

    def read(load):
        try:
            cache.get(key, load)
        except ConnectionError as exc:
            errors.append(exc)

    leader = threading.Thread(target=read, args=(failing,))
    leader.start()
    follower = threading.Thread(target=read, args=(lambda held: Cached("v", []),))
    deadline = time.monotonic() + 5
    while key not in cache._inflight and time.monotonic() < deadline:
        time.sleep(0.001)
    follower.start()
    while cache._inflight[key].waiters < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    release.set()
    leader.join()
    follower.join()
    assert len(errors) == 2  # the leader's error, and the same error for the reader who waited on it
    assert cache.get(key, lambda held: Cached("v", [1])).value == [1]  # nothing cached: tried again
    assert len(cache) == 1
