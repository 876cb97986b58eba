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
