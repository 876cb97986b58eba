"""Season-sized jobs from the ledger, streamed: FLUSHALL + rebuild restores every key the writer
made (members, scores with their reached part, dense companions, which boards expire); a rebuild
of one kind leaves the other kinds and the queue alone; the freeze stores each board exactly as
it ranks, whatever the chunks the rows arrive in."""

import io
import json
import random
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from boards import keys
from boards.codec import ScoreOverflow
from boards.keys import BoardRef
from boards.kinds import ALL
from boards.models import FrozenStanding
from boards.ranking import needs_distinct_points, ranks_for
from boards.standings import OutOfOrder, standings_store
from boards.tally import BoardScores, board_entries
from common.redis import client as redis_client
from scoring import selectors
from scoring.freezing import season_freeze
from scoring.models import ScoreEvent
from scoring.outbox import events_apply_by_id
from scoring.rebuild import boards_rebuild
from scoring.selectors import boards_diff, ledger_boards, ledger_entries
from scoring.testing import drain, make_game, make_key, match_body, outbox_restore, submit_direct, unapplied
from seasons.models import Game

pytestmark = pytest.mark.django_db

# Player ids from every character class the API admits, tied on purpose: display order among equal
# scores is by code point ("0" < "A" < "_" < "a"), in Python and in the ledger's ORDER BY alike.
TIED = ["b", "B", "a-1", "a_1", "a.1", "a:1", "A", "0", "z9", "Z9"]


def seed(game: Game, *, matches: int = 70, seed: int = 5) -> None:
    rng = random.Random(seed)
    key = make_key(game)
    start = timezone.now() - timedelta(days=3)
    accepted = start + timedelta(hours=71)
    for i in range(matches):
        played = start + timedelta(hours=rng.randint(0, 70))
        chosen = rng.sample([f"p{n}" for n in range(12)] + TIED, rng.randint(1, 4))
        results = []
        for player in chosen:
            result = {"player_id": player, "points": rng.choice([0, 5, 5, 40, rng.randint(1, 400)])}
            result["region"] = rng.choice(["eu", "na"])
            if rng.random() < 0.5:
                result["country"] = rng.choice(["de", "fr"])
            results.append(result)
        # Several results in one second: ties on points and on the reached second.
        submit_direct(game, key, match_body(results, played), now=accepted + timedelta(seconds=i // 3))


def dimension_game(**options) -> Game:
    game = make_game(start=timezone.now() - timedelta(days=5), **options)
    game.dimensions = ["country"]
    game.save()
    return game


def snapshot(game: Game) -> dict[str, tuple[list[tuple[str, float]], bool]]:
    """Every board and companion of the game: members with scores, and whether it expires."""
    redis = redis_client()
    found = {}
    for key in redis.scan_iter(match=keys.board_pattern(game.slug)):
        if key.endswith(":v"):
            continue
        found[key] = (redis.zrange(key, 0, -1, withscores=True), redis.ttl(key) > 0)
    return found


@pytest.mark.parametrize(
    ("rule", "ascending"),
    [("competition", False), ("dense", False), ("first", False), ("dense", True), ("competition", True)],
)
def test_flushall_and_rebuild_restore_every_key_the_writer_made(rule, ascending):
    game = dimension_game(tie_rule=rule, ascending=ascending, max_points=100_000)
    seed(game)
    drain()
    before = snapshot(game)
    kinds = {BoardRef.from_key(k.removesuffix(":d")).board for k in before}
    assert kinds == {"all", "daily", "weekly", "monthly", "best"}
    assert any(":country-de:" in k for k in before)
    assert any(k.endswith(":d") for k in before) == needs_distinct_points(rule)
    redis_client().flushall()
    report = boards_rebuild(game=game)
    assert report.boards == len([k for k in before if not k.endswith(":d")])
    assert report.members == sum(len(members) for k, (members, _) in before.items() if not k.endswith(":d"))
    assert snapshot(game) == before


def test_a_rebuild_over_live_boards_replaces_drift_and_drops_boards_the_ledger_lacks():
    game = dimension_game(tie_rule="dense")
    seed(game, matches=30)
    drain()
    before = snapshot(game)
    redis = redis_client()
    season = game.seasons.get()
    all_key = BoardRef(game.slug, season.id, "all").key
    redis.zadd(all_key, {"ghost": 10**9})
    redis.zadd(BoardRef(game.slug, season.id, "best", "nowhere").key, {"ghost": 1})
    report = boards_rebuild(game=game)
    assert report.removed_keys == 1
    assert snapshot(game) == before


def test_every_board_a_rebuild_swaps_in_is_marked_changed_for_the_live_publisher():
    """So a result the rebuild took in from the outbox (never applied by the worker, never
    pushed) reaches the live pages at the next tick, not at the board's next result."""
    game = dimension_game()
    seed(game, matches=20)  # accepted, not applied: the outbox holds them
    redis = redis_client()
    redis.delete(keys.dirty_key())
    report = boards_rebuild(game=game)
    dirty = redis.smembers(keys.dirty_key())
    boards = {k for k in snapshot(game) if not k.endswith(":d")}
    assert report.boards == len(boards) > 0
    assert dirty == boards
    assert unapplied().count() == 0  # the swap took them in


def test_a_rebuild_of_one_kind_leaves_the_other_kinds_and_the_queue_alone():
    game = dimension_game(tie_rule="dense")
    seed(game, matches=30)
    drain()
    season = game.seasons.get()
    redis = redis_client()
    all_key = BoardRef(game.slug, season.id, "all").key
    day = timezone.now().date().isoformat()
    daily_key = BoardRef(game.slug, season.id, "daily", "global", day).key
    redis.zadd(all_key, {"ghost": 10**9})  # drift on both kinds: only `all` is rebuilt
    redis.zadd(daily_key, {"ghost": 10**9})
    stale_all = BoardRef(game.slug, season.id, "all", "nowhere").key
    stale_best = BoardRef(game.slug, season.id, "best", "nowhere").key
    redis.zadd(stale_all, {"ghost": 1})
    redis.zadd(stale_best, {"ghost": 1})
    # A result still queued (no dedup marker) and one applied whose outbox delete was lost.
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "queued", "points": 7}]), now=timezone.now())
    submit_direct(game, key, match_body([{"player_id": "landed", "points": 9}]), now=timezone.now())
    landed = ScoreEvent.objects.get(player_id="landed")
    events_apply_by_id(event_ids=[landed.id], dedup_ttl_s=600)
    outbox_restore([landed])

    out = io.StringIO()
    call_command("rebuild_boards", game.slug, "--board", "all", "--quiet", stdout=out)
    report = json.loads(out.getvalue())
    assert report["kinds"] == ["all"]
    assert (report["marked_applied"], report["left_to_the_worker"], report["removed_keys"]) == (0, 1, 1)
    assert redis.zscore(all_key, "ghost") is None and redis.zscore(daily_key, "ghost") is not None
    assert not redis.exists(stale_all) and redis.exists(stale_best)
    assert redis.zscore(all_key, "queued") is None  # the worker brings it to every board
    assert redis.zscore(all_key, "landed") is not None  # on the live boards already: kept
    assert unapplied().count() == 2

    drain()
    assert boards_diff(game=game, now=timezone.now()) == {
        daily_key: {"ghost": (10**9, None)},
        stale_best: {"ghost": (1, None)},
    }
    assert int(redis.zscore(all_key, "queued")) == ledger_boards(game=game)[all_key].scores["queued"]


@pytest.mark.parametrize(("rule", "ascending"), [("competition", False), ("dense", False), ("first", True)])
def test_the_freeze_streams_every_board_ranked_as_in_memory(rule, ascending, monkeypatch):
    game = dimension_game(tie_rule=rule, ascending=ascending, max_points=100_000)
    seed(game)
    season = game.seasons.get()
    boards = ledger_boards(game=game, season_id=season.id)
    expected = []
    for board in sorted(boards.values(), key=lambda b: b.ref.key):
        ordered = sorted(board.scores.items(), key=lambda item: (-item[1], item[0]))
        codec_points = [score >> season.time_bits for _, score in ordered]
        ranks = ranks_for(codec_points, rule)
        capacity = (1 << (53 - season.time_bits)) - 1
        for position, ((player, _), points, rank) in enumerate(zip(ordered, codec_points, ranks, strict=True)):
            shown = capacity - points if ascending else points
            ref = board.ref
            expected.append((ref.board, ref.region, ref.period, position, rank, player, shown))
    monkeypatch.setattr(selectors, "STREAM_CHUNK", 4)  # chunks end inside ties and across boards
    assert season_freeze(season_id=season.id, now=timezone.now()) == len(expected)
    stored = FrozenStanding.objects.filter(season=season).values_list(
        "board", "region", "period", "position", "rank", "player_id", "score"
    )
    assert sorted(stored) == sorted(expected)


def test_ties_are_stored_in_code_point_order_of_player_ids():
    game = make_game(tie_rule="competition", start=timezone.now() - timedelta(days=1))
    key = make_key(game)
    now = timezone.now()
    submit_direct(game, key, match_body([{"player_id": p, "points": 5} for p in TIED]), now=now)
    season = game.seasons.get()
    season_freeze(season_id=season.id, now=timezone.now())
    board = FrozenStanding.objects.filter(season=season, board="all", region="global").order_by("position")
    assert [(s.player_id, s.rank) for s in board] == [(p, 1) for p in sorted(TIED)]
    assert sorted(TIED)[:3] == ["0", "A", "B"]


def test_standings_refuse_members_out_of_display_order():
    game = make_game()
    season = game.seasons.get()
    board = BoardScores(ref=BoardRef(game.slug, season.id, "all"), scores={"a": 1, "b": 2}, last_write=timezone.now())
    [chunk] = board_entries([board])
    with pytest.raises(OutOfOrder):
        standings_store(season=season, entries=[list(reversed(chunk))])


def test_a_score_past_the_seasons_capacity_is_an_explicit_overflow():
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "a", "points": 5}]), now=timezone.now())
    ScoreEvent.objects.update(points=2**40)  # past 2**(53 - time_bits): written around the checks
    with pytest.raises(ScoreOverflow):
        ledger_boards(game=game)


def test_entries_stream_in_chunks_of_the_size_asked():
    game = dimension_game()
    seed(game, matches=20)
    with ledger_entries(game=game, kinds=[ALL], ordered=True, chunk=3) as chunks:
        sizes = [len(rows) for rows in chunks]
    assert max(sizes) == 3 and sum(sizes) == sum(len(b.scores) for b in ledger_boards(game=game, kinds=[ALL]).values())
