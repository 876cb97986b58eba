"""League cohorts exact under concurrency, against real processes (issue 25, item 1; docs/api.md,
"Leagues", cohorts): two web servers, two Celery workers and beat on the test run's database and
Redis (the tournaments' harness, test_tournament_concurrency.py).

10,000 players' first results (matches of 10 players, in batches of 25 matches) come at once from 4
senders, each batch through one web process and the next through the other. A third of the
players are in silver, a sixth in gold (their LeaguePlayer rows), the rest in bronze. Meanwhile one
worker is SIGKILLed holding a batch of results with cohorts (leaderboard_site/tests/apply_hold.py),
before its Lua apply or after it and before the outbox rows go; it is restarted and the relay sends
the batch again. Then: every cohort but the last of each division has exactly 30 players, numbered
from 1 without a gap, no player is in two, each player is in their division, the Redis player map
and counters equal the stored seats, every result's ledger row names its player's cohort, and once
the queue drains every cohort board equals the ledger, member by member, and the season boards too.
"""

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from common.redis import boards_client
from common.testing import run_together, wait_for
from competitions import league_keys
from competitions.league_models import LeagueMember, LeaguePlayer
from competitions.testing import make_league
from leaderboard_site.tests.test_tournament_concurrency import Cluster, all_applied, kill_mid_batch
from scoring.models import LeagueResult
from scoring.selectors import boards_diff
from scoring.testing import cohort_boards_read, cohort_ledger, make_game, make_key

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True), pytest.mark.timeout(150)]

PLAYERS = 10_000
PER_MATCH = 10
PER_BATCH = 25  # matches a request
SENDERS = 4
SIZE = 30
PERIOD = 4  # make_league's hourly periods started three hours ago


def player_ids() -> list[str]:
    return [f"p{i:05d}" for i in range(PLAYERS)]


def divisions_set(league: Any, players: list[str]) -> dict[str, int]:
    """A third of the players in silver (1), a sixth in gold (2), the rest in bronze (no row)."""
    division = {p: 0 for p in players}
    division.update({p: 1 for p in players[::3]})
    division.update({p: 2 for p in players[1::6]})
    LeaguePlayer.objects.bulk_create(
        [LeaguePlayer(league=league, player_id=p, division=d, period=3) for p, d in division.items() if d]
    )
    return division


def batches(players: list[str]) -> list[dict[str, Any]]:
    """The batch bodies: each player in one match, points 1..97 by position."""
    now = timezone.now().isoformat()
    matches = []
    for start in range(0, len(players), PER_MATCH):
        results = [
            {"player_id": p, "points": (start + j) % 97 + 1} for j, p in enumerate(players[start : start + PER_MATCH])
        ]
        matches.append({"match_id": str(uuid.uuid4()), "played_at": now, "duration_s": 540, "results": results})
    return [{"matches": matches[i : i + PER_BATCH]} for i in range(0, len(matches), PER_BATCH)]


def send_all(cluster: Cluster, key: Any, bodies: list[dict[str, Any]]) -> None:
    """SENDERS threads released together, each sending its share of the batches, alternating the
    web processes; every match 202, every result accepted."""
    statuses: list[int] = []

    def sender(i: int) -> None:
        for n, body in enumerate(bodies[i::SENDERS]):
            status, _, answer = cluster.call(i + n, key, "POST", "/api/v1/games/arena/matches/batch", body)
            assert status == 200, (status, answer)
            statuses.extend(m["http_status"] for m in answer["matches"])
            assert all(r["status"] == "accepted" for m in answer["matches"] for r in m["results"])

    run_together(sender, SENDERS)
    assert Counter(statuses) == {202: PLAYERS // PER_MATCH}


def seats_exact(league: Any, division: dict[str, int]) -> dict[str, str]:
    """The stored seats: each player once, in their division, every cohort but the last of a
    division full, numbered 1..n. Returns {player: "D:N"}."""
    rows = list(
        LeagueMember.objects.filter(league=league, period=PERIOD).values_list("player_id", "division", "number")
    )
    assert len(rows) == PLAYERS
    assert len({p for p, _, _ in rows}) == PLAYERS  # nobody in two cohorts
    assert all(division[p] == d for p, d, _ in rows)
    sizes = Counter((d, n) for _, d, n in rows)
    for d in (0, 1, 2):
        mine = [sizes[(d, n)] for n in range(1, 1 + max(n for dd, n in sizes if dd == d))]
        expected = sum(1 for p in division if division[p] == d)
        assert sum(mine) == expected
        assert mine[:-1] == [SIZE] * (len(mine) - 1), (d, mine)
        assert 1 <= mine[-1] <= SIZE
    return {p: f"{d}:{n}" for p, d, n in rows}


def state_agrees(game: Any, league: Any, seats: dict[str, str]) -> None:
    """Redis's player map and counters say what the stored seats say."""
    redis = boards_client()
    assert redis.hgetall(league_keys.members_key(game.slug, league.slug, PERIOD)) == seats
    counters = redis.hgetall(league_keys.state_key(game.slug, league.slug, PERIOD))
    sizes = Counter(seats.values())
    for seat, size in sizes.items():
        assert int(counters[f"c:{seat}"]) == size, seat
    for d in ("0", "1", "2"):
        assert int(counters[f"o:{d}"]) == max(int(s.split(":")[1]) for s in sizes if s.split(":")[0] == d)
    assert redis.zcard(league_keys.holes_key(game.slug, league.slug, PERIOD)) == 0


def ledger_agrees(league: Any, seats: dict[str, str]) -> None:
    rows = LeagueResult.objects.filter(league=league, period=PERIOD).values_list("player_id", "division", "number")
    found = {p: f"{d}:{n}" for p, d, n in rows}
    assert len(found) == PLAYERS and found == seats


def ten_thousand_with_a_kill(tmp_path: Path, hold_at: str) -> None:
    # The relay sends a batch again after 20 s: the held one is still held when the test looks at it,
    # after the 10,000 results are in and their seats checked.
    hold = {"APPLY_HOLD_DIR": str(tmp_path), "APPLY_HOLD_AT": hold_at}
    cluster = Cluster(workers=2, hold=hold, relay_after_s=20)
    try:
        game = make_game()
        key = make_key(game)
        league = make_league(game, cohort_size=SIZE)
        players = player_ids()
        division = divisions_set(league, players)
        bodies = batches(players)
        wait_for("both workers consuming, the boards marker written", cluster.workers_ready, timeout=30)
        send_all(cluster, key, bodies)
        seats = seats_exact(league, division)
        state_agrees(game, league, seats)
        ledger_agrees(league, seats)
        held = kill_mid_batch(cluster, tmp_path, hold_at)
        assert LeagueResult.objects.filter(event_id__in=held, number__isnull=False).exists()
        wait_for("every result applied", all_applied, timeout=60)
        boards = cohort_boards_read(league, PERIOD)
        assert sum(len(members) for members in boards.values()) == PLAYERS
        assert boards == cohort_ledger(league, PERIOD)
        assert {cohort: set(members) for cohort, members in boards.items()} == {
            tuple(int(x) for x in seat.split(":")): {p for p, s in seats.items() if s == seat}
            for seat in set(seats.values())
        }
        assert boards_diff(game=game, now=timezone.now()) == {}
        assert json.loads((tmp_path / "held.json").read_text())["at"] == hold_at
    finally:
        cluster.stop()


def test_ten_thousand_first_results_fill_cohorts_exactly_with_a_worker_killed_before_its_apply(tmp_path):
    ten_thousand_with_a_kill(tmp_path, "before_apply")


def test_ten_thousand_first_results_fill_cohorts_exactly_with_a_worker_killed_after_its_apply(tmp_path):
    ten_thousand_with_a_kill(tmp_path, "after_apply")
