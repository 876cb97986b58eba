"""Property tests of the score encoding: order preserved, exact, overflow refused."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from boards.codec import EXACT_BITS, ScoreCodec, ScoreOverflow
from seasons.services import time_bits_for_window

time_bits = st.integers(min_value=1, max_value=40)


@st.composite
def codec_and_entry(draw, bits=time_bits):
    codec = ScoreCodec(draw(bits))
    points = draw(st.integers(min_value=0, max_value=codec.max_points))
    reached = draw(st.integers(min_value=0, max_value=codec.max_reached_s))
    return codec, points, reached


@given(codec_and_entry())
def test_round_trip_is_exact_through_a_double(entry):
    codec, points, reached = entry
    score = codec.encode(points=points, reached_s=reached)
    assert score < 2**EXACT_BITS
    as_redis_stores_it = float(score)
    assert int(as_redis_stores_it) == score
    assert codec.points(as_redis_stores_it) == points
    assert codec.reached_s(as_redis_stores_it) == reached


@given(time_bits.flatmap(lambda b: st.tuples(st.just(b), codec_and_entry(st.just(b)), codec_and_entry(st.just(b)))))
def test_order_is_points_first_then_earlier_reach(args):
    _, (codec, p1, t1), (_, p2, t2) = args
    s1, s2 = float(codec.encode(points=p1, reached_s=t1)), float(codec.encode(points=p2, reached_s=t2))
    if p1 != p2:
        assert (s1 > s2) == (p1 > p2)
    elif t1 != t2:
        assert (s1 > s2) == (t1 < t2)
    else:
        assert s1 == s2


@given(codec_and_entry(), st.integers(min_value=1, max_value=2**20))
def test_points_past_the_capacity_are_refused_not_rounded(entry, extra):
    codec, _, reached = entry
    with pytest.raises(ScoreOverflow):
        codec.encode(points=codec.max_points + extra, reached_s=reached)


def test_a_90_day_season_with_grace_fits_a_billion_points():
    bits = time_bits_for_window(90 * 86400 + 3600)
    codec = ScoreCodec(bits)
    assert bits == 23
    assert codec.max_points == 2**30 - 1
    assert codec.max_reached_s >= 90 * 86400 + 3600
