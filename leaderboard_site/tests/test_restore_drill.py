"""The restore drill of docs/operations.md ("Backing up and restoring PostgreSQL"), with real
processes (issue 13, item 3).

A service (web, worker, beat) on a database of its own and a Redis of its own, with the key prefix
derived from the database (REDIS_KEY_PREFIX unset). It accepts 500 results (set A); pg_dump; it
accepts 1,000 more (set B). Then the documented steps: stop the processes, dropdb --force,
createdb, pg_restore, `manage.py realign_redis`, start. Afterwards:
- every board equals the restored ledger, which holds A only;
- 1,000 new results (set C), whose ledger ids are the ids B had, each count exactly once;
- B sent again by its match servers (same match ids and bodies, signed anew) is answered 202, not
  200 as a replay, and counts once; sent once more, it is a replay.
The drill's figures (dump, restore, realign, rebuild) are printed.
"""

import json
import random
import time
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from common.formats import iso
from scoring.models import ScoreEvent

from .outage_tools import (
    PrivateRedis,
    ScratchDatabase,
    Service,
    board_entries,
    boards_equal_ledger,
    events_applied,
    get_json,
    ledger_query,
    ledger_totals,
    manage,
    send_matches,
    wait_until,
)

pytestmark = [pytest.mark.timeout(240)]

SLUG = "drill"
PLAYERS = 150
BATCH = 250  # matches per batch request
SINGLES = 100  # of set B, sent one match per request (the single-result endpoint)
EVENTS = ScoreEvent._meta.db_table


def new_matches(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """`count` matches of one result each, played a few seconds ago."""
    played = iso(timezone.now().replace(microsecond=0) - timedelta(seconds=5))
    return [
        {
            "match_id": str(uuid.uuid4()),
            "played_at": played,
            "duration_s": 300,
            "results": [{"player_id": f"p{rng.randrange(PLAYERS)}", "points": rng.randint(1, 500)}],
        }
        for _ in range(count)
    ]


def points_of(*sets: list[dict[str, Any]]) -> Counter[str]:
    totals: Counter[str] = Counter()
    for matches in sets:
        for match in matches:
            for result in match["results"]:
                totals[result["player_id"]] += result["points"]
    return totals


def ids_of(url: str, matches: list[dict[str, Any]]) -> set[int]:
    """The ledger ids of the matches' results."""
    match_ids = [uuid.UUID(m["match_id"]) for m in matches]
    return {int(r[0]) for r in ledger_query(url, f"SELECT id FROM {EVENTS} WHERE match_id = ANY(%s)", [match_ids])}


def test_restore_from_a_dump_then_new_results_and_resends_count_once(tmp_path):
    rng = random.Random(13)
    db = ScratchDatabase()
    redis = PrivateRedis()
    service = Service(
        DATABASE_URL=db.url,
        REDIS_URL=redis.url,
        CELERY_BROKER_URL=redis.url,
        REDIS_KEY_PREFIX="",  # named after the database, as by default
        KEY_RATE_PER_S="0",  # the buckets are not what this drill is about
        PLAYER_BUCKET_BURST="0",
        RECONCILE_INTERVAL_S="3600",  # no scheduled repair behind the test's back
    )

    def send(matches: list[dict[str, Any]], singles: int = 0) -> Counter[tuple[int, str]]:
        answers = send_matches(service.port, SLUG, key, matches, singles=singles, batch=BATCH)
        return Counter(answers.values())

    def applied(events: int) -> bool:
        return wait_until(lambda: events_applied(db.url, events), since=time.monotonic(), timeout=30) is not None

    def board() -> Counter[str]:
        return Counter(dict(board_entries(service.port, SLUG)))

    figures: dict[str, float] = {}
    try:
        redis.start()
        db.create()
        manage("migrate", "--noinput", **service.env)
        start = iso(timezone.now() - timedelta(days=1))
        manage("create_game", SLUG, "--name", "Drill", "--season-start", start, **service.env)
        key = json.loads(manage("create_server_key", SLUG, **service.env))
        service.start()

        set_a = new_matches(rng, 500)
        assert send(set_a) == {(202, ""): 500}
        assert applied(500)

        dump = tmp_path / "leaderboard.dump"
        clock = time.monotonic()
        db.dump(dump)  # online, as documented
        figures["dump_s"] = time.monotonic() - clock

        set_b = new_matches(rng, 1000)
        assert send(set_b, SINGLES) == {(202, ""): 1000}
        assert applied(1500)
        assert board() == points_of(set_a, set_b)
        b_ids = ids_of(db.url, set_b)
        assert len(b_ids) == 1000

        # The documented restore: 1. stop, 2. restore, 3. realign_redis, 4. start.
        clock = time.monotonic()
        service.stop()
        figures["stop_s"] = time.monotonic() - clock
        clock = time.monotonic()
        db.restore(dump)
        figures["restore_s"] = time.monotonic() - clock
        clock = time.monotonic()
        realigned = json.loads(manage("realign_redis", **service.env))
        figures["realign_s"] = time.monotonic() - clock
        clock = time.monotonic()
        service.start()
        figures["start_s"] = time.monotonic() - clock

        print(f"\nrealign_redis: {json.dumps(realigned)}")
        assert realigned["keys_dropped"] > 0
        assert (realigned["ledger_events"], realigned["ledger_max_id"]) == (500, max(ids_of(db.url, set_a)))
        recovery = realigned["recovery"]
        assert recovery["games"] == [SLUG] and recovery["failed"] == [] and recovery["marker"], recovery
        assert recovery["members"] > 0, recovery

        # The restored ledger holds A only, every event applied; the boards equal it.
        stored = {str(m) for (m,) in ledger_query(db.url, f"SELECT match_id FROM {EVENTS}")}
        assert stored == {m["match_id"] for m in set_a}
        assert events_applied(db.url, 500)
        assert ledger_totals(db.url) == points_of(set_a)
        assert board() == points_of(set_a)
        boards_equal_ledger(SLUG, **service.env)

        # 1,000 new results: their ids are the ids B had before the restore; each counts once.
        set_c = new_matches(rng, 1000)
        assert send(set_c) == {(202, ""): 1000}
        assert applied(1500)
        reused = ids_of(db.url, set_c) & b_ids
        print(f"set C: {len(reused)} of its 1000 ledger ids were set B's before the restore")
        assert len(reused) >= 500, len(reused)
        assert ledger_totals(db.url) == points_of(set_a, set_c)
        assert board() == points_of(set_a, set_c)
        boards_equal_ledger(SLUG, **service.env)

        # The match servers send B again, exactly as before (signed anew): new to the restored
        # ledger, so 202 without the replay header, and each counts once.
        assert send(set_b, SINGLES) == {(202, ""): 1000}
        assert applied(2500)
        assert ledger_totals(db.url) == points_of(set_a, set_b, set_c)
        assert board() == points_of(set_a, set_b, set_c)
        report = boards_equal_ledger(SLUG, **service.env)
        # Sent once more, B is what a replay looks like: 200 (the header on the singles), no change.
        assert send(set_b[: SINGLES + BATCH], SINGLES) == {(200, "true"): SINGLES, (200, ""): BATCH}
        assert board() == points_of(set_a, set_b, set_c)
        status, ready = get_json(service.port, "/health/ready")
        assert status == 200 and ready["queue_lag_s"] == 0, ready
        assert service.alive()

        print(
            f"restore drill: pg_dump {figures['dump_s']:.2f} s; stop {figures['stop_s']:.2f} s; "
            f"dropdb + createdb + pg_restore {figures['restore_s']:.2f} s; realign_redis {figures['realign_s']:.2f} s "
            f"(the rebuild in it {recovery['seconds']:.2f} s, {recovery['members']} members; "
            f"{realigned['keys_dropped']} keys dropped); start {figures['start_s']:.2f} s; "
            f"afterwards {report['entries']} board entries compared with the ledger, drift 0"
        )
    finally:
        service.stop()
        redis.close()
        db.drop()
