"""Reconciliation (reconcile.py): drift put into Redis by hand is found, counted exactly, repaired,
and shown on /metrics; results on their way are not drift; a second run finds nothing."""

import io
import json
import random
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from boards import keys
from boards.epoch import epoch_forget
from boards.keys import BoardRef
from boards.models import Player
from boards.tally import BoardScores
from common.metrics import counters
from common.redis import client as redis_client
from scoring.models import EventStatus, ScoreEvent
from scoring.reconcile import boards_reconcile
from scoring.recovery import boards_recover_if_lost
from scoring.selectors import boards_diff, ledger_boards
from scoring.tasks import boards_reconcile as reconcile_task
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from seasons.models import Game

pytestmark = pytest.mark.django_db


def seed(game: Game, *, players: int = 30, matches: int = 120) -> None:
    boards_recover_if_lost()  # the boards marker, as the beat writes it at the first start
    rng = random.Random(8)
    key = make_key(game)
    start = timezone.now() - timedelta(days=3)
    for i in range(matches):
        chosen = rng.sample(range(players), 2)
        results = [{"player_id": f"p{p}", "points": rng.randint(0, 90), "region": ["eu", "na"][p % 2]} for p in chosen]
        accepted = start + timedelta(minutes=30 * i)
        submit_direct(game, key, match_body(results, accepted - timedelta(minutes=5)), now=accepted)
    drain()


def reconcile_lines(*args: str) -> list[dict]:
    out = io.StringIO()
    call_command("reconcile_boards", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def reconcile(*args: str) -> list[dict]:
    """The command's report per game (after its line on the dedup markers)."""
    first, *games = reconcile_lines(*args)
    assert "unreflected" in first
    return games


def board_of(game: Game, kind: str, region: str = "global", *, period: str = "-") -> BoardScores:
    season_id = game.seasons.get().id
    return ledger_boards(game=game)[BoardRef(game.slug, season_id, kind, region, period).key]


def corrupt(game: Game) -> int:
    """Three kinds of drift, by hand: a wrong score, a member gone, a member the ledger lacks.
    Returns how many board entries now differ."""
    redis = redis_client()
    span = 1 << game.seasons.get().time_bits
    season = board_of(game, "all")
    wrong = sorted(season.scores)[0]
    redis.zadd(season.ref.key, {wrong: season.scores[wrong] + 5 * span})  # 5 points too many
    daily_key = next(
        k
        for k, b in ledger_boards(game=game).items()
        if b.ref.board == "daily" and b.ref.region == "eu" and len(b.scores) > 3 and not b.expired(timezone.now())
    )
    gone = next(p for p in sorted(ledger_boards(game=game)[daily_key].scores) if p != wrong)
    redis.zrem(daily_key, gone)
    best = board_of(game, "best")
    redis.zadd(best.ref.key, {"ghost": 77 * span})
    assert len(boards_diff(game=game, now=timezone.now())) == 3
    return 3


def metrics_text(client) -> str:
    response = client.get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


def test_full_reconcile_counts_repairs_and_shows_the_drift(client):
    game = make_game(start=timezone.now() - timedelta(days=5))
    seed(game)
    corrupted = corrupt(game)

    dry = reconcile("arena", "--full", "--dry-run")
    assert [r["drift"] for r in dry] == [corrupted]
    assert len(boards_diff(game=game, now=timezone.now())) == 3  # a dry run repairs nothing

    [first] = reconcile("arena", "--full")
    assert (first["drift"], first["drifted_players"], first["pending"]) == (corrupted, 3, 0)
    assert first["repaired"] == corrupted
    assert boards_diff(game=game, now=timezone.now()) == {}
    text = metrics_text(client)
    assert 'leaderboard_reconcile_drift_total{game="arena"} 3' in text
    assert 'leaderboard_reconcile_last_drift{game="arena"} 3' in text

    [second] = reconcile("arena", "--full")
    assert second["drift"] == 0 and second["candidates"] == 0 and second["entries"] > 100
    text = metrics_text(client)
    assert 'leaderboard_reconcile_drift_total{game="arena"} 3' in text  # a counter: the total so far
    assert 'leaderboard_reconcile_last_drift{game="arena"} 0' in text


def test_the_sample_finds_the_drift_of_the_players_it_draws():
    game = make_game(start=timezone.now() - timedelta(days=5))
    seed(game)
    corrupted = corrupt(game)
    # A sample larger than the game draws every player (and the ghost, from the season board).
    report = boards_reconcile(game=game, sample=100, rng=random.Random(2))
    assert (report.full, report.drift, report.repaired) == (False, corrupted, corrupted)
    assert report.players == 31  # 30 players and the ghost
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert reconcile_task() == 0  # the beat's run: a sample of every game, nothing left


def test_results_on_their_way_are_not_drift():
    game = make_game(start=timezone.now() - timedelta(days=5))
    seed(game)
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "p1", "points": 40, "region": "na"}]), now=timezone.now())
    assert boards_diff(game=game, now=timezone.now())  # the boards lack it until the worker applies it
    for full in (True, False):
        report = boards_reconcile(game=game, full=full, sample=100)
        assert report.drift == 0 and report.pending > 0 and report.repaired == 0
    drain()
    assert boards_diff(game=game, now=timezone.now()) == {}


def test_a_hidden_player_left_on_a_board_is_drift():
    game = make_game(start=timezone.now() - timedelta(days=5))
    seed(game)
    Player.objects.filter(game=game, player_id="p3").update(hidden=True)  # the index was not told
    report = boards_reconcile(game=game, full=True)
    assert report.drift > 0 and report.drifted_players == 1
    assert all(example[1] == "p3" and example[3] is None for example in report.examples)
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert not redis_client().zscore(board_of(game, "all").ref.key, "p3")


def test_nothing_is_compared_while_the_boards_marker_is_missing():
    game = make_game(start=timezone.now() - timedelta(days=5))
    seed(game)
    corrupt(game)
    epoch_forget()
    report = boards_reconcile(game=game, full=True)
    assert "marker" in report.skipped and report.drift == 0
    boards_recover_if_lost()  # the beat's check: everything rebuilt, the marker back
    assert boards_diff(game=game, now=timezone.now()) == {}
    corrupt(game)
    redis_client().set(keys.rebuild_lock_key(game.slug), "another process")
    report = boards_reconcile(game=game, full=True)
    assert "rebuild" in report.skipped and report.drift == 0


def test_results_applied_in_the_ledger_but_absent_from_redis_are_counted_and_put_back(client):
    """As after Redis came back from an older snapshot (or a ledger was restored over a Redis nobody
    brought in line): results the ledger marks applied whose markers and board entries are gone."""
    game = make_game(start=timezone.now() - timedelta(days=5))
    seed(game)
    [quiet] = [line["unreflected"] for line in reconcile_lines("arena", "--dry-run")[:1]]
    assert (quiet["checked"], quiet["missing"]) == (240, 0)  # every result of the seed, each with its marker
    lost_players = ["p1", "p2", "p3"]
    lost = list(
        ScoreEvent.objects.filter(player_id__in=lost_players, status=EventStatus.ACCEPTED).values_list("id", flat=True)
    )
    redis = redis_client()
    for event_id in lost:
        redis.hdel(*keys.dedup_location(event_id))
    for key in redis.scan_iter(match=keys.board_pattern("arena"), count=1000):
        if keys.is_board_key(key):
            redis.zrem(key, *lost_players)
    assert boards_diff(game=game, now=timezone.now())

    [line, *_] = reconcile_lines("arena", "--sample", "0")
    found = line["unreflected"]
    assert (found["missing"], found["players"], found["by_game"]) == (len(lost), 3, {"arena": len(lost)})
    assert found["repaired"] > 0 and found["unrepaired"] == 0
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert counters()["reconcile_unreflected:arena"] == len(lost)
    assert f'leaderboard_reconcile_unreflected_events_total{{game="arena"}} {len(lost)}' in metrics_text(client)

    [again, *_] = reconcile_lines("arena", "--sample", "0")
    assert again["unreflected"]["checked"] == 0  # the watermark moved past them
