"""Hostile traffic and moderation under races: nothing bad is stored, boards always equal the ledger."""

import json
import random
import threading
import time
import uuid

import pytest
from django.db import connection
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from anticheat.models import GameRules
from anticheat.services import server_key_revoke
from boards.writer import events_apply
from common.signing import signature_compute
from common.testing import asgi_requests_together
from scoring.models import MatchSubmission, ScoreEvent
from scoring.moderation import player_ban, results_approve, results_revoke
from scoring.selectors import boards_diff
from scoring.testing import drain, event_rows, make_game, make_key, match_body, result_path, submit_direct


def _signed(key, path: str, body: bytes, *, ts: int, secret: str, sign_body: bytes | None = None) -> dict[str, str]:
    signature = signature_compute(secret=secret, timestamp=str(ts), method="POST", path=path, body=sign_body or body)
    return {"X-Leaderboard-Key": key.key_id, "X-Leaderboard-Timestamp": str(ts), "X-Leaderboard-Signature": signature}


def _send(client, key, path: str, body: bytes, *, ts: int, secret: str, sign_body: bytes | None = None, headers=None):
    sent = _signed(key, path, body, ts=ts, secret=secret, sign_body=sign_body) if headers is None else headers
    return client.generic("POST", path, data=body, content_type="application/json", headers=sent)


class _Together:
    """Requests sent 100 at a time through the production ASGI application, as one server process
    receives concurrent clients (one at a time, each waits out the single-result path's grouping
    window), all on one event loop as in a server. Replies are recorded per class of attack."""

    def __init__(self, app, statuses: dict[str, set[int]]) -> None:
        self.app = app
        self.statuses = statuses
        self.pending: list[tuple[str, dict]] = []

    def add(self, kind: str, path: str, body: bytes, headers: dict[str, str]) -> None:
        request = {
            "path": path,
            "method": "POST",
            "body": body,
            "headers": [("Content-Type", "application/json"), *headers.items()],
        }
        self.pending.append((kind, request))

    def flush(self) -> None:
        if self.pending:
            replies = asgi_requests_together(self.app, [request for _, request in self.pending], at_once=100)
            for (kind, _), reply in zip(self.pending, replies, strict=True):
                self.statuses[kind].add(reply.status_code)
            self.pending = []


@pytest.mark.django_db
def test_ten_thousand_bad_submissions_store_nothing(client, production_app):
    game = make_game()
    other = make_game("other")
    key = make_key(game)
    revoked = make_key(game)
    server_key_revoke(key_id=revoked.key_id)
    foreign = make_key(other)
    rng = random.Random(9)
    classes = [
        "no_signature",
        "unknown_key",
        "revoked_key",
        "byte_flipped",
        "ts_minus_301",
        "ts_plus_301",
        "reserialised",
        "other_game",
        "mass_status",
        "mass_approved",
        "mass_applied_at",
    ]
    statuses: dict[str, set[int]] = {c: set() for c in classes}
    together = _Together(production_app, statuses)
    for i in range(10_000):
        kind = classes[i % len(classes)]
        path = result_path(game, uuid.uuid4())
        body_obj = match_body([{"player_id": f"p{rng.randint(0, 99)}", "points": rng.randint(0, 100)}])
        while kind.startswith("ts_") and time.time() % 1 > 0.9:  # no tick between signing and checking
            time.sleep(0.02)
        now = int(time.time())
        if kind.startswith("mass_"):
            field = kind.removeprefix("mass_")
            target = body_obj if i % 2 else body_obj["results"][0]
            target[field] = (
                "accepted" if field == "status" else (True if field == "approved" else "2026-01-01T00:00:00Z")
            )
        body = json.dumps(body_obj).encode()
        # The clock classes go one at a time (signed and checked within the same second, so the
        # window edge is exactly 301 s); the others 100 together (a valid timestamp stays valid).
        if kind == "ts_minus_301":
            statuses[kind].add(_send(client, key, path, body, ts=now - 301, secret=key.secret).status_code)
        elif kind == "ts_plus_301":
            statuses[kind].add(_send(client, key, path, body, ts=now + 301, secret=key.secret).status_code)
        elif kind == "no_signature":
            together.add(kind, path, body, {})
        elif kind == "unknown_key":
            ghost = type("K", (), {"key_id": "lbk_" + uuid.uuid4().hex[:16]})()
            together.add(kind, path, body, _signed(ghost, path, body, ts=now, secret=key.secret))
        elif kind == "revoked_key":
            together.add(kind, path, body, _signed(revoked, path, body, ts=now, secret=revoked.secret))
        elif kind == "byte_flipped":
            flipped = bytearray(body)
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(7)
            together.add(kind, path, bytes(flipped), _signed(key, path, body, ts=now, secret=key.secret))
        elif kind == "reserialised":
            pretty = json.dumps(body_obj, indent=1).encode()  # the signature covers other bytes
            together.add(kind, path, body, _signed(key, path, pretty, ts=now, secret=key.secret))
        elif kind == "other_game":
            together.add(kind, path, body, _signed(foreign, path, body, ts=now, secret=foreign.secret))
        else:
            together.add(kind, path, body, _signed(key, path, body, ts=now, secret=key.secret))
    together.flush()
    assert all(statuses.values()), statuses  # every class was sent and answered
    assert ScoreEvent.objects.count() == 0 and MatchSubmission.objects.count() == 0
    assert all(codes <= {400, 401, 403} for codes in statuses.values()), statuses
    assert statuses["other_game"] == {403}
    assert statuses["mass_status"] == {400}


@pytest.mark.django_db(transaction=True)
def test_approve_and_revoke_raced_on_the_same_results_leave_no_ghost():
    game = make_game()
    GameRules.objects.filter(game=game).update(max_points_per_minute=1)  # every result goes to review
    key = make_key(game)
    for i in range(0, 1000, 250):  # 1,000 pending results in 4 batches
        from scoring.services import matches_submit
        from scoring.validation import validate_match

        now = timezone.now()
        parsed = []
        for j in range(i, i + 250):
            match_id = uuid.uuid4()
            body = match_body([{"player_id": f"p{j % 20}", "points": 50}])
            match, errors = validate_match(body, match_id=match_id, max_points=10_000, now=now, max_future_s=60)
            parsed.append((match_id, match, errors))
        matches_submit(game=game, key=key, matches=parsed, now=now)
    pending = list(ScoreEvent.objects.filter(status="pending_review").values_list("id", flat=True))
    assert len(pending) == 1000

    def race(event_id: int) -> None:
        barrier = threading.Barrier(2)

        def approve() -> None:
            barrier.wait()
            results_approve(event_ids=[event_id], reason="ok", actor_label="t1")
            connection.close()

        def revoke() -> None:
            barrier.wait()
            results_revoke(event_ids=[event_id], reason="no", actor_label="t2")
            connection.close()

        threads = [threading.Thread(target=approve), threading.Thread(target=revoke)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    for event_id in pending:
        race(event_id)
    drain()
    assert boards_diff(game=game, now=timezone.now()) == {}
    accepted = ScoreEvent.objects.filter(status="accepted").count()
    assert accepted + ScoreEvent.objects.filter(status="revoked").count() == 1000
    from boards import keys
    from common.redis import client as redis_client

    board = keys.BoardRef("arena", game.seasons.get().id, "all").key
    assert all(score >= 0 for _, score in redis_client().zrange(board, 0, -1, withscores=True))


class Moderation(RuleBasedStateMachine):
    """Random submit / redeliver / approve / revoke / ban sequences on real Redis and PostgreSQL."""

    @initialize()
    def setup(self) -> None:
        self.game = make_game("m-" + uuid.uuid4().hex[:8])
        GameRules.objects.filter(game=self.game).update(player_burst=2, player_refill_s=3600)
        self.key = make_key(self.game)

    @rule(player=st.integers(0, 4), points=st.integers(0, 300))
    def submit(self, player: int, points: int) -> None:
        submit_direct(
            self.game, self.key, match_body([{"player_id": f"p{player}", "points": points}]), now=timezone.now()
        )

    @rule()
    def apply_queue(self) -> None:
        drain()

    @rule(data=st.data())
    def redeliver(self, data) -> None:
        events = list(ScoreEvent.objects.filter(game=self.game, status="accepted")[:20])
        if events:
            chosen = data.draw(st.lists(st.sampled_from(events), max_size=5))
            events_apply(events=event_rows(chosen), dedup_ttl_s=600)

    @rule(data=st.data())
    def approve(self, data) -> None:
        ids = list(ScoreEvent.objects.filter(game=self.game, status="pending_review").values_list("id", flat=True))
        if ids:
            results_approve(event_ids=data.draw(st.lists(st.sampled_from(ids), max_size=3)), reason="ok")

    @rule(data=st.data())
    def revoke(self, data) -> None:
        ids = list(ScoreEvent.objects.filter(game=self.game).values_list("id", flat=True))
        if ids:
            results_revoke(event_ids=data.draw(st.lists(st.sampled_from(ids), max_size=3)), reason="no")

    @rule(player=st.integers(0, 4))
    def ban(self, player: int) -> None:
        player_ban(game=self.game, player_id=f"p{player}", revoke_since=timezone.now() - timezone.timedelta(hours=1))

    @invariant()
    def boards_equal_the_ledger_once_drained(self) -> None:
        if not hasattr(self, "game"):
            return
        drain()
        assert boards_diff(game=self.game, now=timezone.now()) == {}


TestModeration = Moderation.TestCase
TestModeration.settings = settings(
    max_examples=12, stateful_step_count=12, deadline=None, suppress_health_check=list(HealthCheck)
)
TestModeration = pytest.mark.django_db(TestModeration)
