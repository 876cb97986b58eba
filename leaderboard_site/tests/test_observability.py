"""Operators see inside (issue 11, item 7): /metrics and the request id, through the production ASGI
application in-process, and with real web and worker processes.

- Every HTTP answer, fast path or Django, carries `X-Request-ID` (the client's when sane).
- Request latency is labelled by the route's name, never its path: no player id on /metrics.
- After a signed POST, an apply and a WebSocket connection, each family is on /metrics.
- In production /metrics wants the bearer token; without one configured it is closed.
- A request id sent with a signed batch is in the web's log line for the request and in the
  worker's log line for the task that applied its events (JSON lines), and the worker's apply lag
  is on the web's /metrics.
"""

import json
import re
import time
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.urls import resolve
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from boards import fastpath as board_fastpath
from boards.testing import record
from common.signing import signed_headers
from common.testing import asgi_request, free_port, start_web, start_worker, stop
from scoring import fastpath as single_fastpath
from scoring.models import EventStatus, ScoreEvent, UnappliedEvent
from scoring.testing import drain, make_game, make_key, match_body, result_path, signed_post

HEX32 = re.compile(r"[0-9a-f]{32}")
WS_HEADERS = [(b"origin", b"http://testserver"), (b"host", b"testserver")]


def app():
    from leaderboard_site.asgi import application

    return application


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of a /metrics page: (name, labels) -> value."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def metrics_page() -> str:
    response = asgi_request(app(), "/metrics")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    return response.content.decode()


@pytest.mark.django_db
def test_every_answer_carries_a_request_id_the_clients_when_sane():
    game = make_game()
    record(game, "amy", 10)
    for path in ("/api/v1/games/arena/boards/all/top", "/health/live", "/api/v1/games/arena", "/no/such/page"):
        made = asgi_request(app(), path)
        assert HEX32.fullmatch(made["X-Request-ID"]), path
        assert [n for n, _ in made.raw_headers].count("X-Request-ID") == 1
        kept = asgi_request(app(), path, headers=[("X-Request-ID", "lb-trace_1.2:3")])
        assert kept["X-Request-ID"] == "lb-trace_1.2:3"
        replaced = asgi_request(app(), path, headers=[("X-Request-ID", "<script>")])
        assert HEX32.fullmatch(replaced["X-Request-ID"])
    # A single-result POST answered on its fast path.
    key = make_key(game)
    path = result_path(game, uuid.uuid4())
    body = json.dumps(match_body([{"player_id": "amy", "points": 3}])).encode()
    headers = signed_headers(key_id=key.key_id, secret=key.secret, method="POST", path=path, body=body)
    answer = asgi_request(
        app(), path, method="POST", body=body, headers=[*headers.items(), ("X-Request-ID", "single-1")]
    )
    assert answer.status_code == 202 and answer["X-Request-ID"] == "single-1"


def test_the_fast_paths_name_their_routes_as_django_does():
    paths = [
        ("GET", "/api/v1/games/arena/boards/all/top"),
        ("GET", "/api/v1/games/arena/boards/all/distribution"),
        ("GET", "/api/v1/games/arena/boards/all/players/amy"),
        ("GET", "/api/v1/games/arena/boards/all/players/amy/around"),
        ("GET", "/api/v1/games/arena/boards/all/players/amy/friends"),
        ("POST", f"/api/v1/games/arena/matches/{uuid.uuid4()}/results"),
    ]
    for method, path in paths:
        router = board_fastpath.ROUTER if method == "GET" else single_fastpath.ROUTER
        found = router.match(method, path)
        assert found is not None, path
        assert found[0].route == resolve(path).view_name


@pytest.mark.django_db
def test_latency_is_labelled_by_route_never_by_path():
    game = make_game()
    record(game, "secret-player-7", 10)
    requests = [
        ("/api/v1/games/arena/boards/all/top", "board-top"),  # the fast path
        ("/api/v1/games/arena/boards/all/players/secret-player-7", "board-player"),
        ("/api/v1/games/arena/boards/all/players/nobody-such-9", "board-player"),  # 404, answered by Django
        ("/api/v1/games/arena", "game-detail"),  # Django
        ("/health/live", "health-live"),
        ("/admin/login/", "admin"),
        ("/static/no-such-file.js", "static"),
        ("/players/secret-player-7/nowhere", "unmatched"),
    ]
    before = samples(metrics_page())
    for path, _ in requests:
        asgi_request(app(), path)
    text = metrics_page()
    after = samples(text)
    for path, route in requests:
        name = "leaderboard_http_request_duration_seconds_count"
        counted = [
            key for key in after if key[0] == name and ("route", route) in key[1] and ("method", "GET") in key[1]
        ]
        assert counted, (path, route)
        assert sum(after[k] - before.get(k, 0.0) for k in counted) >= 1, (path, route)
    assert "secret-player-7" not in text and "nobody-such-9" not in text and "/players/" not in text
    routes = {dict(labels)["route"] for name, labels in after if name.startswith("leaderboard_http_request")}
    assert all(re.fullmatch(r"[a-z][a-z-]*", route) for route in routes), routes  # URL pattern names only


@pytest.mark.django_db(transaction=True)
def test_each_family_after_a_signed_post_an_apply_and_a_websocket(client):
    game = make_game("famous")
    key = make_key(game)
    before = samples(metrics_page())
    batch = {
        "matches": [
            {"match_id": str(uuid.uuid4()), **match_body([{"player_id": "p-amy", "points": 5}])},
            {"match_id": "not-a-uuid", **match_body([{"player_id": "p-bo", "points": 5}])},
        ]
    }
    answer = signed_post(client, key, "/api/v1/games/famous/matches/batch", batch)
    assert answer.status_code == 200
    assert [m["http_status"] for m in answer.json()["matches"]] == [202, 400]
    assert drain() == 1  # the apply, as the worker runs it

    async def connected_then_gone() -> tuple[str, str]:
        socket = WebsocketCommunicator(app(), "/ws/games/famous/boards/all/?region=global", headers=WS_HEADERS)
        assert (await socket.connect())[0]
        await socket.receive_json_from(timeout=5)
        from asgiref.sync import sync_to_async

        during = await sync_to_async(metrics_page)()
        await socket.disconnect()
        return during, await sync_to_async(metrics_page)()

    during, gone = async_to_sync(connected_then_gone)()
    after = samples(gone)
    assert value(samples(during), "leaderboard_websocket_connections", game="famous") == 1
    assert value(after, "leaderboard_websocket_connections", game="famous") == 0

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("leaderboard_matches_total", game="famous", outcome="stored", reason="") == 1
    assert grew("leaderboard_matches_total", game="famous", outcome="refused", reason="invalid") == 1
    assert grew("leaderboard_results_total", game="famous", outcome="accepted", reason="") == 1
    assert grew("leaderboard_apply_lag_seconds_count") >= 1
    assert value(after, "leaderboard_events_unapplied") == 0
    assert value(after, "leaderboard_queue_lag_seconds") == 0
    assert ("leaderboard_apply_queue_tasks", frozenset()) in after
    for family in ("leaderboard_boards_recoveries_total", "leaderboard_boards_recovery_seconds"):
        assert (family, frozenset()) in after
    assert "p-amy" not in gone and "p-bo" not in gone


@pytest.mark.django_db
def test_quarantined_and_refused_results_are_counted_by_reason(client):
    from anticheat.services import game_rules_set

    game = make_game("strict")
    game_rules_set(game=game, player_burst=1, player_refill_s=3600, min_duration_s=600)
    key = make_key(game)
    before = samples(metrics_page())
    body = {
        "matches": [
            {"match_id": str(uuid.uuid4()), **match_body([{"player_id": "amy", "points": 1}], duration_s=900)},
            {"match_id": str(uuid.uuid4()), **match_body([{"player_id": "amy", "points": 1}], duration_s=900)},
            {"match_id": str(uuid.uuid4()), **match_body([{"player_id": "bo", "points": 1}], duration_s=60)},
        ]
    }
    assert signed_post(client, key, "/api/v1/games/strict/matches/batch", body).status_code == 200
    assert sorted(ScoreEvent.objects.values_list("status", "reason")) == sorted(
        [(EventStatus.ACCEPTED, ""), (EventStatus.PENDING_REVIEW, "rate"), (EventStatus.REJECTED, "implausible")]
    )
    after = samples(metrics_page())
    for outcome, reason in (("accepted", ""), ("quarantined", "rate"), ("refused", "implausible")):
        labels = {"game": "strict", "outcome": outcome, "reason": reason}
        assert (
            value(after, "leaderboard_results_total", **labels) - value(before, "leaderboard_results_total", **labels)
            == 1
        ), labels


@pytest.mark.django_db
def test_metrics_need_the_bearer_token_when_protected(client, settings):
    assert client.get("/metrics").status_code == 200  # development and tests: open
    settings.METRICS_PROTECTED = True
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 403  # production with no token: closed to everyone
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 403
    settings.METRICS_TOKEN = "s3cret-token"
    refused = client.get("/metrics")
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Basic s3cret-token"}).status_code == 401
    allowed = client.get("/metrics", headers={"Authorization": "Bearer s3cret-token"})
    assert allowed.status_code == 200 and b"leaderboard_" in allowed.content
    settings.METRICS_PROTECTED = False  # a token set in development protects it too
    assert client.get("/metrics").status_code == 401


def json_lines(folder: Path, name: str) -> list[dict]:
    lines = []
    for log in sorted(folder.glob(f"{name}-*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                lines.append(json.loads(line))
    return lines


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_a_request_id_follows_a_batch_from_the_web_to_the_worker(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_PROCESS_LOGS", str(tmp_path))
    game = make_game("traced")
    key = make_key(game)
    port = free_port()
    env = {"LOG_LEVEL": "INFO", "LOG_FORMAT": "json", "SCORING_ENQUEUE_LINGER_MS": "10"}
    web = start_web(port, **env)
    worker = start_worker(**env)
    rid = f"trace-{uuid.uuid4().hex[:12]}"
    try:
        path = "/api/v1/games/traced/matches/batch"
        body = json.dumps(
            {
                "matches": [
                    {"match_id": str(uuid.uuid4()), **match_body([{"player_id": f"t{i}", "points": 10 + i}])}
                    for i in range(3)
                ]
            }
        ).encode()
        headers = signed_headers(key_id=key.key_id, secret=key.secret, method="POST", path=path, body=body)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}{path}",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "X-Request-ID": rid, **headers},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
            assert response.headers["X-Request-ID"] == rid
        deadline = time.monotonic() + 30
        while UnappliedEvent.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not UnappliedEvent.objects.exists()

        def worker_line() -> dict | None:
            for line in json_lines(tmp_path, "worker"):
                if line.get("message", "").startswith("apply task") and (
                    line.get("request_id") == rid or rid in line.get("request_ids", [])
                ):
                    return line
            return None

        deadline = time.monotonic() + 10
        while worker_line() is None and time.monotonic() < deadline:  # written just after the outbox delete
            time.sleep(0.1)
        applied = worker_line()
        assert applied is not None, json_lines(tmp_path, "worker")
        assert (applied["events"], applied["applied"], applied["skipped"]) == (3, 3, 0)
        assert applied["level"] == "INFO" and applied["logger"] == "scoring.tasks" and applied["lag_max_s"] >= 0
        traced = [line for line in json_lines(tmp_path, "web") if line.get("request_id") == rid]
        [written] = traced  # one line per write request (no access log)
        assert written["message"].startswith("write traced: 3 matches")
        assert (written["game"], written["matches_stored"], written["results_accepted"]) == ("traced", 3, 3)

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
        found = samples(text)
        # Observed in the worker's pool child, shown by the web: the processes share the folder.
        assert value(found, "leaderboard_apply_lag_seconds_count") >= 3
        assert value(found, "leaderboard_results_total", game="traced", outcome="accepted", reason="") == 3
        batch = {("route", "matches-batch"), ("method", "POST"), ("status", "200")}
        assert any(n == "leaderboard_http_request_duration_seconds_count" and batch <= set(k) for n, k in found)
        assert "t0" not in re.findall(r'"([^"]*)"', text)  # no player id in any label
    finally:
        stop(worker)
        stop(web)


@pytest.mark.django_db(transaction=True)
def test_single_results_answered_in_one_group_send_each_request_id_with_their_apply_task():
    """Single-result POSTs answered together (one group, one transaction, one apply task): the task
    carries every one of their request ids, each request its own answer's."""
    from celery.signals import after_task_publish

    from common.testing import asgi_requests_together
    from scoring.services import apply_flush

    game = make_game()
    key = make_key(game)
    published: list[tuple[str, list[str]]] = []

    def seen(sender=None, headers=None, **_):
        published.append((sender, list((headers or {}).get("request_ids", []))))

    after_task_publish.connect(seen)
    try:
        requests = []
        for i in range(3):
            path = result_path(game, uuid.uuid4())
            body = json.dumps(match_body([{"player_id": f"s{i}", "points": i + 1}])).encode()
            headers = signed_headers(key_id=key.key_id, secret=key.secret, method="POST", path=path, body=body)
            requests.append(
                {
                    "path": path,
                    "method": "POST",
                    "body": body,
                    "headers": [*headers.items(), ("X-Request-ID", f"one-{i}")],
                }
            )
        answers = asgi_requests_together(app(), requests)
        apply_flush()
    finally:
        after_task_publish.disconnect(seen)
    assert [a.status_code for a in answers] == [202, 202, 202]
    assert [a["X-Request-ID"] for a in answers] == ["one-0", "one-1", "one-2"]
    tasks = [ids for name, ids in published if name == "scoring.apply_events"]
    assert tasks and sorted(i for ids in tasks for i in ids) == ["one-0", "one-1", "one-2"]


@pytest.mark.django_db(transaction=True)
def test_each_webhook_has_its_delivered_retried_failed_and_oldest_undelivered_age(settings):
    """The dispatcher's counters (its process's files) and the backlog read at scrape time."""
    from events.models import Delivery, DeliveryStatus
    from events.services import events_publish, webhook_create
    from events.testing import Receiver, dispatcher_running

    settings.WEBHOOK_RETRY_BASE_S, settings.WEBHOOK_RETRY_MAX_S = 0.05, 0.1
    settings.WEBHOOK_RETRY_FOR_S, settings.EVENTS_DISPATCH_POLL_S = 0.6, 0.05
    game = make_game("arena")
    with Receiver(lambda n, request: 500 if n == 0 else 200) as flaky, Receiver(lambda n, request: 503) as broken:
        good = webhook_create(game=game, url=flaky.url)
        bad = webhook_create(game=game, url=broken.url)
        idle = webhook_create(game=game, url="http://127.0.0.1:9/never", types=["season.frozen"])
        for player in ("a", "b"):
            events_publish(game=game, type="player.banned", data={"player_id": player, "revoked": 0})
        waiting = webhook_create(game=game, url="http://127.0.0.1:9/later")
        Delivery.objects.create(
            event_id=Delivery.objects.first().event_id,
            webhook=waiting,
            next_attempt_at=timezone.now() + timedelta(hours=1),
            deadline_at=timezone.now() + timedelta(days=1),
            created_at=timezone.now() - timedelta(seconds=90),
        )
        with dispatcher_running():
            flaky.wait_for(lambda r: len(r.event_ids()) == 2, timeout=10)
            failed = Delivery.objects.filter(webhook=bad, status=DeliveryStatus.FAILED)
            broken.wait_for(lambda r: failed.count() == 2, timeout=10)
    found = samples(metrics_page())
    assert value(found, "leaderboard_webhook_delivered_total", webhook=str(good.pk)) == 2
    assert value(found, "leaderboard_webhook_retried_total", webhook=str(good.pk)) == 1
    assert value(found, "leaderboard_webhook_failed_total", webhook=str(bad.pk)) == 2
    assert value(found, "leaderboard_webhook_retried_total", webhook=str(bad.pk)) >= 2
    assert value(found, "leaderboard_webhook_pending", webhook=str(good.pk)) == 0
    assert value(found, "leaderboard_webhook_oldest_undelivered_seconds", webhook=str(idle.pk)) == 0
    assert value(found, "leaderboard_webhook_pending", webhook=str(waiting.pk)) == 1
    assert 90 <= value(found, "leaderboard_webhook_oldest_undelivered_seconds", webhook=str(waiting.pk)) < 120


def test_beat_prunes_the_events_every_hour():
    from leaderboard_site.celery import app as celery_app

    entry = celery_app.conf.beat_schedule["events.prune"]
    assert (entry["task"], entry["schedule"]) == ("events.prune", 3600.0)
