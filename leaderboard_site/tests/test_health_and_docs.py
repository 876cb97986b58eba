"""Health probes, the OpenAPI document (committed copy in sync) and the CDN-free docs page."""

import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from scoring.testing import make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db


def test_live_and_ready(client):
    assert client.get("/health/live").status_code == 200
    ready = client.get("/health/ready")
    assert ready.status_code == 200
    assert ready.json() == {"database": "ok", "redis": "ok", "queue_lag_s": 0.0}


def test_ready_reports_queue_lag_of_the_oldest_unapplied_event(client):
    game = make_game()
    key = make_key(game)
    submit_direct(
        game, key, match_body([{"player_id": "a", "points": 1}]), now=timezone.now() - timezone.timedelta(seconds=30)
    )
    lag = client.get("/health/ready").json()["queue_lag_s"]
    assert 29 <= lag <= 60


def test_ready_names_redis_when_it_is_down(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/health/ready")
    assert response.status_code == 503
    assert response.json()["redis"].startswith("error") and response.json()["database"] == "ok"


def test_reads_while_redis_is_down_are_a_quick_503(client, settings):
    make_game()
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/api/v1/games/arena/boards/all/top")
    assert response.status_code == 503
    assert response.json()["code"] == "boards_unavailable"
    assert response["Retry-After"] == "5"


def test_docs_page_uses_no_cdn_and_schema_is_served(client):
    page = client.get("/api/docs/").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and all(s.startswith("/") for s in sources), sources
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "/api/v1/games/{game}/matches/{match_id}/results" in schema["paths"]


def test_committed_openapi_schema_is_current(tmp_path):
    fresh = tmp_path / "openapi.yaml"
    call_command("spectacular", "--file", str(fresh), "--validate")
    committed = Path(settings.BASE_DIR) / "docs" / "openapi.yaml"
    assert yaml.safe_load(committed.read_text()) == yaml.safe_load(fresh.read_text()), "run `make schema`"
