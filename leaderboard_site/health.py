"""Liveness and readiness probes (the Prometheus text exposition: metrics.py)."""

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from redis.cluster import RedisCluster

from common.redis import boards_client, client, on_cluster
from scoring.selectors import queue_lag_s


def live(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def ready(request: HttpRequest) -> JsonResponse:
    """200 with {database, redis, queue_lag_s} when the service can serve; 503 naming what failed.

    queue_lag_s is the age of the oldest accepted event not yet on the boards (0 when none).
    """
    body: dict[str, object] = {"database": "ok", "redis": "ok", "queue_lag_s": 0.0}
    healthy = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        body["queue_lag_s"] = round(queue_lag_s(now=timezone.now()), 3)
    except Exception as exc:
        healthy = False
        body["database"] = f"error: {exc.__class__.__name__}"
        body["queue_lag_s"] = None
    try:
        client().ping()
    except Exception as exc:
        healthy = False
        body["redis"] = f"error: {exc.__class__.__name__}"
    if on_cluster():
        body["redis_cluster"] = cluster = _cluster_health()
        healthy = healthy and cluster["state"] == "ok"
    return JsonResponse(body, status=200 if healthy else 503)


def _cluster_health() -> dict[str, object]:
    """The boards' Redis Cluster: its state ("ok" once every slot has a master that answers) and
    each node as the cluster sees it ("master", "replica", with ",fail" when it is down)."""
    try:
        redis = boards_client()
        assert isinstance(redis, RedisCluster)
        state = str(redis.cluster_info()["cluster_state"])
        nodes = {}
        for address, node in sorted(redis.cluster_nodes().items()):
            flags = str(node["flags"])
            down = "fail" in flags or not node.get("connected", True)
            nodes[address] = ("master" if "master" in flags else "replica") + (",fail" if down else "")
    except Exception as exc:
        return {"state": f"error: {exc.__class__.__name__}", "nodes": {}}
    return {"state": state, "nodes": nodes}
