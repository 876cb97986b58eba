"""Fixtures of the tests with real processes."""

import pytest

from common.testing import free_port, start_beat, start_web, start_worker, stop


@pytest.fixture
def service():
    """Web, worker and beat on the test run's database and Redis; yields the base URL."""
    port = free_port()
    web = start_web(port)
    worker = start_worker()
    beat = start_beat()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for proc in (web, worker, beat):
            stop(proc)
