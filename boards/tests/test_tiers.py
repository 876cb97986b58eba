"""Tiers (docs/api.md, "Tiers"): the check of a configuration and which tier an entry is in, at
the edges of each strategy."""

import pytest

from boards.tiers import BadTiers, tiers_of, tiers_parse


def parse(by, *cutoffs, ascending=False):
    names = ["diamond", "gold", "silver", "bronze"][: len(cutoffs)]
    tiers = [*({"name": n, "cutoff": c} for n, c in zip(names, cutoffs, strict=True)), {"name": "wood"}]
    return tiers_parse({"by": by, "tiers": tiers}, ascending=ascending)


def test_score_tiers_take_the_score_at_the_cutoff_and_not_one_below():
    tiers = parse("score", 100, 50)
    assert [tiers.of(score=s, rank=1, total=9) for s in (1000, 100, 99, 50, 49, 0)] == [
        "diamond",
        "diamond",
        "gold",
        "gold",
        "wood",
        "wood",
    ]
    low = parse("score", 30, 60, ascending=True)  # lower is better: at most the cutoff
    assert [low.of(score=s, rank=1, total=9) for s in (10, 30, 31, 60, 61)] == [
        "diamond",
        "diamond",
        "gold",
        "gold",
        "wood",
    ]


def test_rank_tiers_take_the_last_rank_in_and_every_tie_on_it():
    tiers = parse("rank", 1, 10)
    assert [tiers.of(score=0, rank=r, total=100) for r in (1, 2, 10, 11)] == ["diamond", "gold", "gold", "wood"]
    # competition ranks 1, 2, 2, 4 with a cutoff of 2: both players on rank 2 are in, the 4th is not.
    two = parse("rank", 2)
    assert [two.of(score=0, rank=r, total=4) for r in (1, 2, 2, 4)] == ["diamond", "diamond", "diamond", "wood"]


@pytest.mark.parametrize(
    ("total", "last_in"),
    [(1, 1), (10, 1), (11, 2), (100, 10), (101, 11), (1000, 100)],
)
def test_percent_tiers_take_ceil_of_the_share_of_the_board(total, last_in):
    tiers = parse("percent", 10)
    assert tiers.of(score=0, rank=last_in, total=total) == "diamond"
    assert tiers.of(score=0, rank=last_in + 1, total=total) == "wood"


def test_a_decimal_percent_is_exact_not_a_binary_float():
    tiers = parse("percent", 0.1, 50)
    # 0.1% of 1,000 is exactly 1 (a float product gives 1.0000000000000002 and its ceil 2).
    assert tiers.of(score=0, rank=1, total=1000) == "diamond"
    assert tiers.of(score=0, rank=2, total=1000) == "gold"
    assert tiers.document() == {
        "by": "percent",
        "tiers": [{"name": "diamond", "cutoff": 0.1}, {"name": "gold", "cutoff": 50}, {"name": "wood", "cutoff": None}],
    }


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"by": "elo", "tiers": [{"name": "a"}]}, "by must be"),
        ({"by": "score", "tiers": []}, "1 to 20"),
        ({"by": "score", "tiers": [{"name": "A", "cutoff": 5}, {"name": "b"}]}, "[a-z0-9-]"),
        ({"by": "score", "tiers": [{"name": "a", "cutoff": 5}, {"name": "a"}]}, "used twice"),
        ({"by": "score", "tiers": [{"name": "a"}, {"name": "b"}]}, "needs a cutoff"),
        ({"by": "score", "tiers": [{"name": "a", "cutoff": 5}, {"name": "b", "cutoff": 1}]}, "no cutoff"),
        ({"by": "score", "tiers": [{"name": "a", "cutoff": 5}, {"name": "b", "cutoff": 5}, {"name": "c"}]}, "looser"),
        ({"by": "rank", "tiers": [{"name": "a", "cutoff": 10}, {"name": "b", "cutoff": 3}, {"name": "c"}]}, "looser"),
        ({"by": "rank", "tiers": [{"name": "a", "cutoff": 0}, {"name": "b"}]}, "from 1"),
        ({"by": "rank", "tiers": [{"name": "a", "cutoff": 1.5}, {"name": "b"}]}, "integer"),
        ({"by": "percent", "tiers": [{"name": "a", "cutoff": 101}, {"name": "b"}]}, "at most 100"),
        ({"by": "percent", "tiers": [{"name": "a", "cutoff": True}, {"name": "b"}]}, "number"),
        ({"by": "score", "tiers": [{"name": "a", "cutoff": 2**53}, {"name": "b"}]}, "from 0"),
        ({"by": "score", "tiers": [{"name": "a"}], "extra": 1}, "The body must be"),
    ],
)
def test_a_bad_configuration_says_what_is_wrong(body, says):
    with pytest.raises(BadTiers, match=r".*" + says.replace("[", r"\[").replace("]", r"\]")):
        tiers_parse(body, ascending=False)


def test_tiers_of_a_configuration_are_parsed_once_per_copy():
    configured = {"all": parse("rank", 3).document()}
    first = tiers_of(configured, "all", ascending=False)
    assert first is tiers_of(configured, "all", ascending=False)
    assert tiers_of(configured, "best", ascending=False) is None
    assert tiers_of({}, "all", ascending=False) is None
