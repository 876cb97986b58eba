"""The process metrics' folder: a process that dies, even by SIGKILL, stops counting in the live
gauges at the next scrape, while its counters stay in the sums. Many values observed at once count
as each observed alone."""

import os
import signal
import subprocess
import sys

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from common.observability import Histogram, dead_processes_forget, observe_many

CHILD = """
from prometheus_client import Counter, Gauge
Gauge("t_open", "open things", multiprocess_mode="livesum").inc(3)
Counter("t_done", "done things").inc(5)
print("counted", flush=True)
import time; time.sleep(60)
"""


def scrape(folder) -> str:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(folder))
    return generate_latest(registry).decode()


def test_a_sigkilled_process_leaves_its_counters_but_not_its_live_gauges(tmp_path):
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)},
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"counted\n"
        assert dead_processes_forget(tmp_path) == []  # alive: kept
        text = scrape(tmp_path)
        assert "t_open 3.0" in text and "t_done_total 5.0" in text
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        assert dead_processes_forget(tmp_path) == [child.pid]
        text = scrape(tmp_path)
        assert "t_open 3.0" not in text
        assert "t_done_total 5.0" in text
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_observing_many_at_once_counts_as_observing_each():
    one_by_one = Histogram("t_each_seconds", "each", buckets=(0.1, 1.0, 5.0))
    at_once = Histogram("t_many_seconds", "many", buckets=(0.1, 1.0, 5.0))
    values = [0.0, 0.1, 0.1000001, 0.5, 1.0, 4.99, 5.0, 7.5, 1e9, -1.0]
    for v in values:
        one_by_one.observe(v)
    observe_many(at_once, values)
    observe_many(at_once, [])

    def of(histogram) -> list[tuple[str, dict, float]]:
        [family] = histogram.collect()
        return [(s.name.split("_seconds")[1], s.labels, s.value) for s in family.samples if "_created" not in s.name]

    assert of(at_once) == of(one_by_one)
    assert ("_count", {}, 10.0) in of(at_once)
