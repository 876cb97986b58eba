"""Pytest fixtures of a real Redis Cluster (common/redis_cluster.py), registered in the root
conftest.py: `redis_cluster`, one 3-master, 3-replica cluster for the whole run (started on first
use only), and `redis_cluster_factory`, for a test that breaks its cluster (kills a master) and so
must not share it. Every cluster lives in the run's temp dir, on free ports, and is stopped at the
end of its scope."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from common.redis_cluster import LocalCluster


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster shared by the session's tests: they must leave it whole (no kills), and use keys
    of their own (it is not flushed between tests)."""
    with LocalCluster(tmp_path_factory.mktemp("redis-cluster")) as cluster:
        yield cluster


@pytest.fixture
def redis_cluster_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., LocalCluster]]:
    """`make(masters=3, replicas=1, **LocalCluster options)`: a started cluster of the test's own,
    stopped when the test ends (however it ends)."""
    started: list[LocalCluster] = []

    def make(masters: int = 3, replicas: int = 1, **options: Any) -> LocalCluster:
        cluster = LocalCluster(tmp_path_factory.mktemp("redis-cluster"), masters=masters, replicas=replicas, **options)
        started.append(cluster)
        return cluster.start()

    yield make
    for cluster in started:
        cluster.stop()
