"""Suite-wide fixtures: every test starts with an empty private Redis and empty in-process caches."""

import pytest

from boards.selectors import top_cache
from common.redis import client
from seasons.selectors import catalog_clear


@pytest.fixture(autouse=True)
def clean_redis():
    client().flushall()
    top_cache.clear()
    catalog_clear()
    yield


@pytest.fixture
def api(client):
    return client
