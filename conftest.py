"""Suite-wide fixtures: every test starts with an empty private Redis and an empty top-N cache."""

import pytest

from boards.selectors import top_cache
from scoring import redis_boards
from seasons.selectors import catalog_clear


@pytest.fixture(autouse=True)
def clean_redis():
    redis_boards.client().flushall()
    top_cache.clear()
    catalog_clear()
    yield


@pytest.fixture
def api(client):
    return client
