"""The OpenAPI document says what the service accepts: requests generated from it alone (the
committed docs/openapi.yaml, through schemathesis and Hypothesis) get no 400 and no 5xx, but for a
period that does not fit its board (the document cannot tie the two) and an id repeated in `ids`. The board
reads run against a game with players, through the production ASGI path (the `client` fixture);
the signed operations answer 401 to unsigned requests, whatever their body."""

import json
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
import schemathesis
from django.conf import settings
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.core import NotSet

from boards.testing import ids_repeated, period_misfits, record
from scoring.testing import make_game

SCHEMA = schemathesis.openapi.from_path(Path(settings.BASE_DIR) / "docs" / "openapi.yaml")
OPERATIONS = sorted((result.ok() for result in SCHEMA.get_all_operations()), key=lambda op: (op.path, op.method))


@pytest.mark.django_db
@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: f"{op.method.upper()} {op.path}")
def test_schema_valid_requests_are_never_a_400_or_a_server_error(client, operation):
    game = make_game()
    for i in range(30):
        record(game, f"p{i:02d}", 10 * i, region="eu", played_at=timezone.now())

    seasons = set(game.seasons.values_list("id", flat=True))
    examples = 60 if "{board}" in operation.path else 25  # every board kind in one operation

    @hypothesis_settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=operation.as_strategy(path_parameters={"game": "arena"}))
    def check(case) -> None:
        path = "/".join(quote(part, safe="") for part in case.formatted_path.split("/"))
        query = urlencode(case.query or {})
        url = f"{path}?{query}" if query else path
        if ids_repeated((case.query or {}).get("ids")):  # read before the board is: its 400 comes first
            response = client.get(url)  # `maya,maya`: a JSON Schema cannot say "distinct" of a string's parts
            assert (response.status_code, response.json()["code"]) == (400, "invalid"), (path, query)
            assert response.json()["detail"] == "ids: each player id at most once.", (path, query)
            return
        board = (case.path_parameters or {}).get("board")
        if board is not None and period_misfits(board, (case.query or {}).get("period")):
            response = client.get(url)  # a day on `weekly`, a period on `all`: the one 400 allowed
            season = (case.query or {}).get("season")
            if season is not None and int(season) not in seasons:  # the season is looked up first
                assert (response.status_code, response.json()["code"]) == (404, "unknown_season"), (path, query)
                return
            assert (response.status_code, response.json()["code"]) == (400, "invalid"), (path, query)
            assert response.json()["detail"].startswith("period: "), (path, query)
            return
        if case.method.upper() == "GET":
            response = client.get(url)
        else:
            headers = {name: str(value) for name, value in (case.headers or {}).items()}
            body = "" if isinstance(case.body, NotSet) or case.body is None else json.dumps(case.body)
            response = client.generic(
                case.method.upper(), url, data=body, content_type="application/json", headers=headers
            )
            assert response.status_code == 401, (case.method, url, response.content)  # unsigned
        assert response.status_code != 400, (path, query, response.content)
        assert response.status_code < 500, (path, query, response.content)

    check()
