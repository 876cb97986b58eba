"""Tournaments exact under concurrency, against real processes (issue 23, item 2; docs/api.md,
"Tournaments"): two web servers, two Celery workers and beat on the test run's database and Redis.

- 200 concurrent joins of a 150-seat tournament, half through each web process: exactly 150 are
  201 and 50 are 409 `tournament_full`; the database and Redis's entrant set hold the same 150.
- 100 concurrent results of one player, each naming three tournaments (`best`, `sum`, `latest`,
  3 attempts each), half through each web process: exactly 3 `counted` and 97 `no_attempts_left`
  per tournament, the ledger agrees, and once the workers have applied them each period board holds
  the best, the sum or the latest of exactly those 3. Meanwhile one worker is SIGKILLed holding a
  batch of counted results (leaderboard_site/tests/apply_hold.py), before its Lua apply or after it
  and before the outbox rows go; it is restarted, the relay sends the batch again, and nothing is
  lost or counted twice. Then the matches are replayed (200, the first answer), every apply is
  delivered again, and a counted result is revoked: the boards read as if it had never counted,
  its attempt is given back, and the next result counts.
"""

import base64
import json
import os
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from boards.epoch import epoch_get
from boards.keys import dedup_location
from common.redis import boards_client, broker_key
from common.redis import client as redis_client
from common.testing import (
    alive,
    children,
    free_port,
    kill_hard,
    run_together,
    signed_http,
    start_beat,
    start_webs,
    start_worker,
    stop,
    wait_for,
)
from competitions import keys
from competitions.models import TournamentEntrant
from competitions.testing import cup_body
from leaderboard_site.tests.apply_hold import HELD_FILE
from leaderboard_site.tests.outage_tools import get_json
from scoring.models import ScoreEvent, TournamentResult, UnappliedEvent
from scoring.moderation import results_revoke
from scoring.selectors import boards_diff
from scoring.services import enqueue_apply
from scoring.testing import make_game, make_key, match_body, outbox_restore, unapplied

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

BASE = "/api/v1/games/arena/tournaments"
CUPS = {"cup-best": "best", "cup-sum": "sum", "cup-latest": "latest"}
HOLD = "leaderboard_site.tests.apply_hold"


class Cluster:
    """Two web servers (each on its own port, so that a test knows which process answered), and
    optionally two workers and beat. A worker given `hold` (apply_hold.py's settings) stops in
    the middle of one batch. The relay sends an unapplied result again after 4 s (2 s in the other
    tests of real processes; `relay_after_s` for a test that looks later): the held batch is not
    sent again before the test has looked at it."""

    def __init__(self, *, workers: int = 0, hold: dict[str, str] | None = None, relay_after_s: int = 4) -> None:
        self.env = {"SCORING_RELAY_AFTER_S": str(relay_after_s)}
        self.hold = hold or {}
        self.ports = [free_port(), free_port()]
        self.workers = [self._worker() for _ in range(workers)]
        self.beat = start_beat(**self.env) if workers else None
        self.webs = start_webs(self.ports, **self.env)

    def _worker(self) -> Any:
        include = ["--include", HOLD] if self.hold else []
        return start_worker(*include, **self.env, **self.hold)

    def workers_ready(self) -> bool:
        """Each worker has its two pool processes (it consumes from then on), and beat's first
        check of the boards marker has run: the test's FLUSHALL looked like a Redis that lost its
        data, and the recovery that follows must not rebuild the boards while the results come."""
        return all(len(children(w.pid)) == 2 for w in self.workers) and epoch_get() is not None

    def worker_holding(self, pid: int) -> int:
        """The index of the worker whose process group holds `pid`."""
        [index] = [i for i, w in enumerate(self.workers) if os.getpgid(pid) == w.pid]
        return index

    def restart_worker(self, index: int) -> None:
        kill_hard(self.workers[index])
        self.workers[index] = self._worker()

    def stop(self) -> None:
        for proc in [*self.webs, *self.workers, *([self.beat] if self.beat else [])]:
            stop(proc)

    def call(self, i: int, key: Any, method: str, path: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
        """A signed request to web process `i % 2`."""
        raw = json.dumps(body).encode() if body is not None else b""
        return signed_http(self.ports[i % 2], method, path, raw, key_id=key.key_id, secret=key.secret)

    def read(self, i: int, path: str) -> dict[str, Any]:
        status, data = get_json(self.ports[i % 2], path, timeout=5)
        assert status == 200, (path, status, data)
        return data


@pytest.fixture
def webs():
    cluster = Cluster()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_200_concurrent_joins_through_two_web_processes_enter_exactly_150(webs):
    game = make_game()
    key = make_key(game)
    created = webs.call(0, key, "PUT", f"{BASE}/cup", cup_body(max_entrants=150, join_required=True))
    assert created[0] == 201, created
    answers: list[tuple[int, str]] = [(0, "")] * 200

    def join(i: int) -> None:
        status, _, data = webs.call(i, key, "PUT", f"{BASE}/cup/entrants/p{i:03d}")
        answers[i] = (status, data.get("code", "") if status != 201 else "")

    run_together(join, 200)
    assert Counter(answers) == {(201, ""): 150, (409, "tournament_full"): 50}
    entered = {f"p{i:03d}" for i, answer in enumerate(answers) if answer[0] == 201}
    assert {i % 2 for i, answer in enumerate(answers) if answer[0] == 201} == {0, 1}  # both processes entered some
    rows = TournamentEntrant.objects.filter(tournament__slug="cup", period=1).values_list("player_id", flat=True)
    assert sorted(rows) == sorted(entered)
    assert boards_client().smembers(keys.entrants_key("arena", "cup", 1)) == entered | {keys.FILLED}
    for i in range(2):
        read = webs.read(i, f"{BASE}/cup")
        assert (read["period"]["entrants"], read["can_enter"]) == (150, False)
    again = webs.call(1, key, "PUT", f"{BASE}/cup/entrants/{sorted(entered)[0]}")
    assert again[0] == 200  # already in: no seat taken


@dataclass
class Played:
    """The matches sent and what each answered."""

    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)  # match id -> body
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # match id -> the 202's body

    def counted(self, cup: str) -> set[str]:
        return {m for m, a in self.answers.items() if a["results"][0]["tournaments"][cup] == "counted"}


def expected_score(scoring: str, matches: list[dict[str, Any]]) -> int | None:
    """The period board's score of a player with these counted matches (docs/api.md, "Counting")."""
    if not matches:
        return None
    points = [m["results"][0]["points"] for m in matches]
    if scoring == "best":
        return max(points)
    if scoring == "sum":
        return sum(points)
    return max(matches, key=lambda m: m["played_at"])["results"][0]["points"]


def send_hundred(cluster: Cluster, key: Any, start: datetime) -> Played:
    """100 results of maya at once, each in its own match naming every cup, alternately through
    each web process; points 1..100, each played a second later than the one before."""
    played = Played()
    ids = [str(uuid.uuid4()) for _ in range(100)]
    for i, match_id in enumerate(ids):
        at = start + timedelta(seconds=i)
        played.bodies[match_id] = match_body([{"player_id": "maya", "points": i + 1}], at, tournaments=list(CUPS))
    statuses: dict[str, int] = {}

    def send(i: int) -> None:
        path = f"/api/v1/games/arena/matches/{ids[i]}/results"
        statuses[ids[i]], _, played.answers[ids[i]] = cluster.call(i, key, "POST", path, played.bodies[ids[i]])

    run_together(send, 100)
    assert Counter(statuses.values()) == {202: 100}
    assert all(a["results"][0]["status"] == "accepted" for a in played.answers.values())
    return played


def ledger_agrees(played: Played) -> dict[str, set[int]]:
    """Per cup: exactly 3 counted and 97 no_attempts_left, in the answers and in the ledger, the
    same matches in both. Returns each cup's counted event ids."""
    events = dict(ScoreEvent.objects.values_list("match_id", "id"))
    counted: dict[str, set[int]] = {}
    for cup in CUPS:
        verdicts = Counter(a["results"][0]["tournaments"][cup] for a in played.answers.values())
        assert verdicts == {"counted": 3, "no_attempts_left": 97}, (cup, verdicts)
        rows = TournamentResult.objects.filter(tournament__slug=cup)
        assert Counter(rows.values_list("verdict", flat=True)) == verdicts
        counted[cup] = set(rows.filter(verdict="counted").values_list("event_id", flat=True))
        assert counted[cup] == {events[uuid.UUID(m)] for m in played.counted(cup)}
    return counted


def boards_read(cluster: Cluster, i: int) -> dict[str, tuple[int | None, int] | int]:
    """maya's (score, attempts) on each cup's period board, read through web process `i % 2`
    (the status instead when it is not a 200)."""
    found: dict[str, tuple[int | None, int] | int] = {}
    for cup in CUPS:
        status, data = get_json(cluster.ports[i % 2], f"{BASE}/{cup}/players/maya", timeout=5)
        found[cup] = (data["score"], data["attempts"]) if status == 200 else status
    return found


def boards_hold(cluster: Cluster, expected: dict[str, tuple[int | None, int]], *, within: float = 0) -> None:
    """Each cup's period board, read through both web processes, gives maya (score, attempts): at
    once, or `within` seconds (the last worker's apply may still be on its way)."""
    try:
        wait_for("the period boards", lambda: all(boards_read(cluster, i) == expected for i in range(2)), within)
    except AssertionError:
        assert [boards_read(cluster, i) for i in range(2)] == [expected, expected]


def attempts_in_redis(cup: str) -> int:
    return int(boards_client().hget(keys.attempts_key("arena", cup, 1), "maya") or 0)


def all_applied() -> bool:
    return not unapplied().exists()


def unacked_batches() -> list[list[int]]:
    """The event ids of each apply task delivered to a worker and not acknowledged yet (kombu's
    Redis transport keeps each such message in the `unacked` hash until its ack)."""
    batches = []
    for raw in redis_client().hvals(broker_key("unacked")):
        message = json.loads(raw)[0]
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        if message["headers"].get("task") == "scoring.apply_events":
            batches.append(list(args[0]))
    return batches


def kill_mid_batch(cluster: Cluster, folder: Path, hold_at: str) -> list[int]:
    """Wait for a worker to hold a batch of counted results, check where it stopped, SIGKILL it
    (its pool processes too) and start it again. Returns the batch's event ids."""
    held = wait_for("a worker holding a batch", lambda: (folder / HELD_FILE).exists(), timeout=30)
    assert held
    batch = json.loads((folder / HELD_FILE).read_text())
    assert batch["at"] == hold_at
    ids = batch["event_ids"]
    # Mid-batch: the task was delivered and not acknowledged, its events are unapplied in the
    # ledger, and the Lua apply has run (after_apply: every event's season dedup marker is there)
    # or not (before_apply: none is).
    assert any(set(ids) <= set(batch) for batch in unacked_batches()), (ids, unacked_batches())
    assert UnappliedEvent.objects.filter(event_id__in=ids).count() == len(ids)
    markers = [boards_client().hexists(*dedup_location(event_id)) for event_id in ids]
    assert markers == [hold_at == "after_apply"] * len(ids), markers
    victim = cluster.worker_holding(batch["pid"])
    cluster.restart_worker(victim)
    wait_for("the held process gone", lambda: not alive(batch["pid"]), timeout=5)
    return list(ids)


def hundred_results_with_a_kill(tmp_path: Path, hold_at: str) -> tuple[Cluster, Any, Played, dict[str, set[int]]]:
    cluster = Cluster(workers=2, hold={"APPLY_HOLD_DIR": str(tmp_path), "APPLY_HOLD_AT": hold_at})
    try:
        game = make_game()
        key = make_key(game)
        start = timezone.now().replace(microsecond=0) - timedelta(minutes=5)
        for cup, scoring in CUPS.items():
            body = cup_body(starts_at=start, scoring=scoring, max_attempts=3)
            assert cluster.call(0, key, "PUT", f"{BASE}/{cup}", body)[0] == 201
        wait_for("both workers consuming, the boards marker written", cluster.workers_ready, timeout=30)
        played = send_hundred(cluster, key, start)
        counted = ledger_agrees(played)
        held = kill_mid_batch(cluster, tmp_path, hold_at)
        assert set(held) & set().union(*counted.values())  # the batch held counted results
        wait_for("every result applied", all_applied, timeout=45)
        by_event = {ScoreEvent.objects.get(match_id=m).id: b for m, b in played.bodies.items()}
        expected = {cup: (expected_score(CUPS[cup], [by_event[e] for e in counted[cup]]), 3) for cup in CUPS}
        boards_hold(cluster, expected, within=10)
        assert [attempts_in_redis(cup) for cup in CUPS] == [3, 3, 3]
        assert boards_diff(game=game, now=timezone.now()) == {}  # the season boards: each result once
        return cluster, key, played, counted
    except BaseException:
        cluster.stop()
        raise


@pytest.mark.timeout(90)
def test_100_concurrent_results_count_3_with_a_worker_killed_before_its_apply(tmp_path):
    cluster, *_ = hundred_results_with_a_kill(tmp_path, "before_apply")
    cluster.stop()


@pytest.mark.timeout(120)
def test_100_concurrent_results_count_3_with_a_worker_killed_after_its_apply_then_replays_and_a_revoke(tmp_path):
    cluster, key, played, counted = hundred_results_with_a_kill(tmp_path, "after_apply")
    try:
        by_event = {ScoreEvent.objects.get(match_id=m).id: b for m, b in played.bodies.items()}
        expected = {cup: (expected_score(CUPS[cup], [by_event[e] for e in counted[cup]]), 3) for cup in CUPS}
        replays_count_once(cluster, key, played, expected)
        revoked_as_if_never_counted(cluster, key, counted, by_event)
    finally:
        cluster.stop()


def replays_count_once(cluster: Cluster, key: Any, played: Played, expected: dict[str, Any]) -> None:
    """Each counted match sent again (and one that had no attempt left): 200 with the first answer;
    then every apply delivered again (the outbox as after a crash, and a duplicate task): the
    attempts stay 3 and the boards unchanged."""
    again = sorted(set().union(*(played.counted(cup) for cup in CUPS)))
    again.append(next(m for m in played.answers if m not in again))
    for i, match_id in enumerate(again):
        path = f"/api/v1/games/arena/matches/{match_id}/results"
        status, headers, body = cluster.call(i, key, "POST", path, played.bodies[match_id])
        assert (status, headers.get("idempotent-replayed"), body) == (200, "true", played.answers[match_id])
    assert TournamentResult.objects.count() == 3 * 100
    events = list(ScoreEvent.objects.all())
    outbox_restore(events)
    enqueue_apply([e.id for e in events])
    wait_for("every result applied again", all_applied, timeout=30)
    boards_hold(cluster, expected)
    assert [attempts_in_redis(cup) for cup in CUPS] == [3, 3, 3]
    assert boards_diff(game=key.game, now=timezone.now()) == {}


def revoked_as_if_never_counted(
    cluster: Cluster, key: Any, counted: dict[str, set[int]], by_event: dict[int, dict[str, Any]]
) -> None:
    """maya's best counted result revoked (the moderators' action): each board it counted on reads
    as if it never had, its attempt given back there; the next result counts there and only there."""
    top = max(counted["cup-best"], key=lambda e: by_event[e]["results"][0]["points"])
    results_revoke(event_ids=[top], reason="cheat")
    remaining = {cup: [by_event[e] for e in ids - {top}] for cup, ids in counted.items()}
    expected = {cup: (expected_score(CUPS[cup], remaining[cup]), len(remaining[cup])) for cup in CUPS}
    boards_hold(cluster, expected)
    assert [attempts_in_redis(cup) for cup in CUPS] == [len(remaining[cup]) for cup in CUPS]
    body = match_body([{"player_id": "maya", "points": 7}], timezone.now(), tournaments=list(CUPS))
    status, _, answer = cluster.call(1, key, "POST", f"/api/v1/games/arena/matches/{uuid.uuid4()}/results", body)
    assert status == 202
    verdicts = answer["results"][0]["tournaments"]
    assert verdicts == {cup: "counted" if top in counted[cup] else "no_attempts_left" for cup in CUPS}
    for cup in CUPS:
        if top in counted[cup]:
            remaining[cup].append(body)
    expected = {cup: (expected_score(CUPS[cup], remaining[cup]), len(remaining[cup])) for cup in CUPS}
    wait_for("the next result applied", all_applied, timeout=20)
    boards_hold(cluster, expected, within=10)
    assert boards_diff(game=key.game, now=timezone.now()) == {}
