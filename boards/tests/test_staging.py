"""A rebuild's last two steps on their own (boards/staging.py): the patch of the staged copies with
what moved during phase 1, and the swap that renames them over the live boards with the markers."""

from datetime import UTC, datetime, timedelta

from boards import keys
from boards.codec import ScoreCodec
from boards.keys import BoardRef, MarkedEvent
from boards.staging import StagedBoard, board_stage_patch, boards_swap
from boards.tally import BoardScores
from common.redis import client as redis_client

CODEC = ScoreCodec(20)
NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)


def score(points: int) -> int:
    return CODEC.encode(points=points, reached_s=0)


def stage(ref: BoardRef, members: dict[str, int]) -> None:
    """A staged copy and its dense companion, as BoardStager leaves them."""
    redis = redis_client()
    redis.zadd(ref.key + keys.REBUILD_SUFFIX, {player: score(points) for player, points in members.items()})
    redis.zadd(keys.distinct_key(ref.key + keys.REBUILD_SUFFIX), {str(p): p for p in set(members.values())})


def staged_copy(ref: BoardRef) -> tuple[dict[str, int], set[int]]:
    """The staged copy's members (points) and its companion's values."""
    redis = redis_client()
    members = {m: CODEC.points(s) for m, s in redis.zrange(ref.key + keys.REBUILD_SUFFIX, 0, -1, withscores=True)}
    distinct = {int(v) for v in redis.zrange(keys.distinct_key(ref.key + keys.REBUILD_SUFFIX), 0, -1)}
    return members, distinct


def test_the_patch_moves_the_touched_players_and_their_distinct_points():
    season = BoardRef("g", 1, "all")
    best = BoardRef("g", 1, "best")
    emptied = BoardRef("g", 1, "all", "eu")
    daily = BoardRef("g", 1, "daily", "global", NOW.date().isoformat())  # began during phase 1
    stage(season, {"a": 10, "b": 10, "c": 5, "d": 3})
    stage(best, {"a": 4, "c": 6})
    stage(emptied, {"c": 5})
    staged = {ref.key: StagedBoard(ref=ref, last_write=NOW - timedelta(hours=1)) for ref in (season, best, emptied)}
    fresh = {
        # a moved down to 7, c is gone from every board (revoked), d did not move
        season.key: BoardScores(ref=season, scores={"a": score(7), "d": score(3)}, last_write=NOW),
        best.key: BoardScores(ref=best, scores={"a": score(4)}, last_write=NOW),
        daily.key: BoardScores(ref=daily, scores={"a": score(7)}, last_write=NOW),
    }
    board_stage_patch(staged=staged, fresh=fresh, players={"a", "c", "d"}, dense=True, codecs={1: CODEC}, now=NOW)
    # 10 stays (b holds it), 5 leaves (no one holds it), 7 comes, 3 stays.
    assert staged_copy(season) == ({"a": 7, "b": 10, "d": 3}, {10, 7, 3})
    assert staged_copy(best) == ({"a": 4}, {4})
    assert staged_copy(daily) == ({"a": 7}, {7})
    assert sorted(staged) == sorted([season.key, best.key, daily.key])  # the emptied board left
    assert staged[season.key].last_write == NOW
    assert 0 < redis_client().ttl(daily.key + keys.REBUILD_SUFFIX)  # a day board lives a while
    assert redis_client().ttl(season.key + keys.REBUILD_SUFFIX) == -1  # a season board for ever


def test_the_swap_renames_the_staged_copies_drops_the_stale_and_sets_the_markers():
    redis = redis_client()
    kept = BoardRef("g", 1, "all")
    stale = BoardRef("g", 1, "all", "nowhere")
    other_kind = BoardRef("g", 1, "best", "nowhere")
    redis.zadd(kept.key, {"old": 1})
    redis.zadd(stale.key, {"ghost": 1})
    redis.zadd(other_kind.key, {"ghost": 1})
    redis.zadd(kept.key + keys.REBUILD_SUFFIX, {"new": 2})
    accepted_at = NOW - timedelta(minutes=1)
    removed = boards_swap(
        game="g",
        board_keys={kept.key},
        dense=False,
        kinds=["all"],
        applied_events=[MarkedEvent(41, accepted_at, "")],
        dedup_ttl_s=600,
    )
    assert removed == 1
    assert redis.zrange(kept.key, 0, -1) == ["new"]
    assert not redis.exists(kept.key + keys.REBUILD_SUFFIX, kept.key + keys.OLD_SUFFIX, stale.key)
    assert redis.zrange(other_kind.key, 0, -1) == ["ghost"]  # not a kind this rebuild took
    assert redis.get(keys.version_key(kept.key)) == redis.get(keys.version_key(stale.key)) is not None
    dkey, dfield = keys.dedup_location(41)
    assert redis.hget(dkey, dfield) == keys.dedup_tag(41, accepted_at)
    assert 0 < redis.ttl(dkey) <= 600
