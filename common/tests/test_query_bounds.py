"""A bounded integer query parameter (common/operations.py `integer`) takes ASCII digits only."""

import pytest

from common.api_errors import ApiError
from common.operations import integer

N = integer("n", low=1, high=1000, default=100, description="n")


@pytest.mark.parametrize("raw", ["²", "١٢", "0", "1001", "-1", "", " 5", "5.0", "1e3"])
def test_anything_but_ascii_digits_in_bounds_is_a_400(raw):
    with pytest.raises(ApiError) as refused:
        N.read(raw)
    assert (refused.value.status_code, refused.value.code) == (400, "invalid")


def test_in_bounds_and_absent():
    assert (N.read("1"), N.read("0001000"), N.read(None)) == (1, 1000, 100)


@pytest.mark.django_db
def test_non_ascii_digits_elsewhere_are_refused_not_500(client):
    """The same check wherever digits come in: a board read's season, a signed request's timestamp."""
    from anticheat.testing import make_key
    from common.signing import HEADER_KEY, HEADER_SIGNATURE, HEADER_TIMESTAMP
    from seasons.testing import make_game

    game = make_game()
    answer = client.get("/api/v1/games/arena/boards/all/top?season=²")
    assert (answer.status_code, answer.json()["code"]) == (400, "invalid")
    key = make_key(game)
    headers = {HEADER_KEY: key.key_id, HEADER_TIMESTAMP: "²", HEADER_SIGNATURE: "0" * 64}
    answer = client.post(
        "/api/v1/games/arena/matches/batch", data=b"{}", content_type="application/json", headers=headers
    )
    assert (answer.status_code, answer.json()["code"]) == (401, "authentication_failed")
