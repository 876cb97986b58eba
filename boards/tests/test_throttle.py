"""The public read throttle: a token bucket per client address (boards/throttle.py)."""

import pytest

from seasons.testing import make_game

pytestmark = pytest.mark.django_db


def test_reads_past_the_address_bucket_are_429(client, settings):
    make_game()
    settings.READ_RATE_PER_S = 1
    settings.READ_RATE_BURST = 3
    codes = [client.get("/api/v1/games/arena/boards/all/top").status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    throttled = client.get("/api/v1/games/arena/boards/all/top")
    assert throttled.json()["code"] == "throttled" and int(throttled["Retry-After"]) >= 1
