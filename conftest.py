"""Suite-wide fixtures: every test starts with an empty private Redis and empty in-process caches,
and the `client` fixture sends the hot board reads through the production ASGI application (the
fast paths, boards/fastpath.py and competitions/fastpath.py), as a server would, and everything
else to Django as usual."""

from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from django.http import HttpResponse
from django.test import Client

from boards.fastpath import ROUTER as READS
from boards.pages import chromes_forget
from boards.selectors import distribution_cache, top_cache
from boards.throttle import reader_buckets_forget
from common.redis import client as redis_client
from common.testing import asgi_request
from competitions.fastpath import ROUTER as STANDINGS
from competitions.fastpath import confs_forget
from scoring.fastpath import ROUTER as SINGLES
from scoring.services import apply_flush
from seasons.catalog import catalog_forget_local


@pytest.fixture(autouse=True)
def clean_redis():
    # Events an earlier test accepted may still be gathered for the apply queue (apply_buffer.py,
    # a flusher thread sends them a linger later): sent now, before the flush, never into this test.
    apply_flush()
    redis_client().flushall()
    top_cache.clear()
    distribution_cache.clear()
    catalog_forget_local()
    reader_buckets_forget()
    chromes_forget()
    confs_forget()
    yield
    apply_flush()


class ProductionClient(Client):
    """Django's test client; GETs of the hot read routes and single-result POSTs go through
    `leaderboard_site.asgi` (their fast paths, falling back to Django as a server does)."""

    def generic(
        self,
        method: str,
        path: str,
        data: Any = "",
        content_type: str = "application/octet-stream",
        secure: bool = False,
        **extra: Any,
    ) -> Any:
        parts = urlsplit(path)
        headers = extra.get("headers") or {}
        single = method == "POST" and SINGLES.match("POST", parts.path) is not None
        if not single or parts.query or secure or set(extra) - {"headers"}:
            return super().generic(method, path, data, content_type, secure, **extra)
        from leaderboard_site.asgi import application

        body = data if isinstance(data, bytes) else str(data).encode()
        return asgi_request(
            application,
            parts.path,
            method="POST",
            body=body,
            headers=[("Content-Type", content_type), *headers.items()],
        )

    def get(self, path: str, data: Any = None, follow: bool = False, secure: bool = False, **extra: Any) -> Any:
        parts = urlsplit(path)
        hot = READS.match("GET", unquote(parts.path)) or STANDINGS.match("GET", unquote(parts.path))
        if data or follow or secure or extra or not hot:
            return super().get(path, data, follow, secure, **extra)
        return asgi_get(parts.path, parts.query)


def asgi_get(path: str, query: str) -> HttpResponse:
    from leaderboard_site.asgi import application

    return asgi_request(application, path, query)


@pytest.fixture
def client() -> Client:
    return ProductionClient()


@pytest.fixture
def production_app() -> Any:
    """The ASGI application production serves (`leaderboard_site.asgi`), for tests below it that
    send requests together (common.testing.asgi_requests_together)."""
    from leaderboard_site.asgi import application

    return application


@pytest.fixture
def api(client):
    return client


# The Redis Cluster fixtures (`redis_cluster`, `redis_cluster_factory`): common/cluster_testing.py.
pytest_plugins = ["common.cluster_testing"]
