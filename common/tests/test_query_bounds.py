"""A bounded integer query parameter (common/operations.py `integer`) takes ASCII digits only; a
required one (`required_integer`, or a `Query` with a parser) is a 400 when absent."""

import pytest

from common.api_errors import ApiError
from common.operations import Query, integer, required_integer

N = integer("n", low=1, high=1000, default=100, description="n")


@pytest.mark.parametrize("raw", ["²", "١٢", "0", "1001", "-1", "", " 5", "5.0", "1e3"])
def test_anything_but_ascii_digits_in_bounds_is_a_400(raw):
    with pytest.raises(ApiError) as refused:
        N.read(raw)
    assert (refused.value.status_code, refused.value.code) == (400, "invalid")


def test_in_bounds_and_absent():
    assert (N.read("1"), N.read("0001000"), N.read(None)) == (1, 1000, 100)


def test_a_required_parameter_absent_is_a_400_and_a_parser_reads_the_text():
    score = required_integer("score", low=0, high=2**53 - 1, example=1, description="score")
    with pytest.raises(ApiError) as refused:
        score.read(None)
    assert (refused.value.status_code, refused.value.code) == (400, "invalid")
    assert score.read("9007199254740991") == 2**53 - 1
    ids = Query("ids", "ids", required=True, parse=lambda raw: raw.split(","))
    assert ids.read("a,b") == ["a", "b"]
    with pytest.raises(ApiError):
        ids.read(None)
