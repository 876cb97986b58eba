"""The per-process gathering of accepted events into apply tasks."""

import threading
import time

from scoring.apply_buffer import ApplyBuffer


class Sent:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[int]] = []
        self.fail = fail
        self.arrived = threading.Event()

    def __call__(self, ids: list[int]) -> None:
        if self.fail:
            raise ConnectionError("broker down")
        self.calls.append(ids)
        self.arrived.set()


def test_requests_within_the_linger_share_one_task():
    sent = Sent()
    buffer = ApplyBuffer(linger_s=0.05, chunk=2000, send=sent)
    buffer.add([1])
    buffer.add([2, 3])
    assert sent.calls == []  # still lingering
    assert sent.arrived.wait(2)
    time.sleep(0.1)
    assert sent.calls == [[1, 2, 3]]


def test_a_full_chunk_goes_at_once_split_into_tasks_of_the_chunk():
    sent = Sent()
    buffer = ApplyBuffer(linger_s=10, chunk=3, send=sent)
    buffer.add([1, 2, 3, 4])
    assert sent.calls == [[1, 2, 3], [4]]


def test_a_broker_that_fails_loses_nothing_the_ledger_holds_and_raises_nothing():
    buffer = ApplyBuffer(linger_s=10, chunk=2, send=Sent(fail=True))
    buffer.add([1, 2])  # sent at once, fails, is logged: the relay resends unapplied events
    buffer.add([3])
    buffer.flush()


def test_what_a_broker_that_is_down_refused_goes_once_it_is_back():
    sent = Sent(fail=True)
    buffer = ApplyBuffer(linger_s=0.01, chunk=2, send=sent, held_max=4)
    buffer.add([1, 2])  # a full chunk: refused, held
    buffer.add([3])
    buffer.flush()
    assert buffer.held == 3
    buffer.add([4, 5, 6])  # held at most 4: the oldest are let go (the relay finds them in the ledger)
    assert buffer.held == 4
    sent.fail = False  # the broker is back: the flusher sends them again within a second
    deadline = time.monotonic() + 5
    while buffer.held and time.monotonic() < deadline:
        time.sleep(0.05)
    assert buffer.held == 0
    assert sorted(i for call in sent.calls for i in call) == [3, 4, 5, 6]
