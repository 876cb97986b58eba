"""The top-N cache of a web process: single-flight (one Redis read per board however many readers
ask at once) and bounded (answers and in-flight loads never pile up)."""

import threading
import time

import pytest
from django.test import Client

from boards import selectors
from boards.selectors import _TopCache, top_cache
from boards.testing import record
from common.testing import run_together
from seasons.testing import make_game


@pytest.mark.django_db(transaction=True)
def test_top_is_read_once_per_board_per_second_however_many_readers(monkeypatch):
    game = make_game()
    record(game, "a", 1)
    top_cache.clear()
    calls = []
    real = selectors.lua_script

    def counting(path):
        script = real(path)

        def run(*args, **kwargs):
            calls.append(path)
            return script(*args, **kwargs)

        return run

    monkeypatch.setattr(selectors, "lua_script", counting)
    answers = []

    def read(_: int) -> None:
        answers.append(Client().get("/api/v1/games/arena/boards/all/top?n=10").json()["entries"])

    run_together(read, 16)
    assert len(answers) == 16 and all(a == answers[0] for a in answers)
    assert len([c for c in calls if c.endswith("top.lua")]) == 1


def test_the_cache_holds_at_most_its_size_and_forgets_finished_loads():
    cache = _TopCache(maxsize=8)
    for n in range(1, 101):
        assert cache.get(("board", n, "0"), lambda n=n: [{"rank": n}]) == [{"rank": n}]
    assert len(cache) == 8  # 100 different n asked for: the 8 most recent answers, no load in flight


def test_a_failed_load_reaches_every_waiter_and_the_next_reader_tries_again():
    cache = _TopCache()
    key = ("board", 10, "0")
    release = threading.Event()
    errors: list[BaseException] = []

    def failing():
        release.wait(5)
        raise ConnectionError("redis is down")

    def read(load):
        try:
            cache.get(key, load)
        except ConnectionError as exc:
            errors.append(exc)

    leader = threading.Thread(target=read, args=(failing,))
    leader.start()
    follower = threading.Thread(target=read, args=(lambda: [],))
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
    assert cache.get(key, lambda: [{"rank": 1}]) == [{"rank": 1}]  # nothing cached: tried again
    assert len(cache) == 1
