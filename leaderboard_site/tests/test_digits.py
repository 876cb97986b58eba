"""Digits that come in as text (a query, a header, a field) are read only when int() can read
them: ASCII digits (common.operations.digits_only). '²' passes str.isdigit()."""

import pytest

from anticheat.testing import make_key
from common.signing import HEADER_KEY, HEADER_SIGNATURE, HEADER_TIMESTAMP
from seasons.testing import make_game


@pytest.mark.django_db
def test_non_ascii_digits_elsewhere_are_refused_not_500(client):
    """The same check wherever digits come in: a board read's season, a signed request's timestamp."""
    game = make_game()
    answer = client.get("/api/v1/games/arena/boards/all/top?season=²")
    assert (answer.status_code, answer.json()["code"]) == (400, "invalid")
    key = make_key(game)
    headers = {HEADER_KEY: key.key_id, HEADER_TIMESTAMP: "²", HEADER_SIGNATURE: "0" * 64}
    answer = client.post(
        "/api/v1/games/arena/matches/batch", data=b"{}", content_type="application/json", headers=headers
    )
    assert (answer.status_code, answer.json()["code"]) == (401, "authentication_failed")
