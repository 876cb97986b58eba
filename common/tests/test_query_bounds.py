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
