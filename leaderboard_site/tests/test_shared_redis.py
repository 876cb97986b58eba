"""Two deployments on one Redis stay apart (issue 13, item 2), with real processes.

Two services (web, worker, beat each), each on a fresh database of its own, both with the key
prefix derived from their database (REDIS_KEY_PREFIX unset), share one private Redis: their boards,
dedup markers, rate buckets, catalogs, Celery queues and remote control, and channel layers. Both
have the same game slug and season id, and are sent the same match ids for the same players with
different points, so their event ids, board keys and tasks would all meet without the prefixes.
Each service's boards equal its own ledger (HTTP reads, the live push, `reconcile_boards --full
--dry-run`), `celery inspect ping` reaches its own worker only, and every key in the Redis starts
with one of the two prefixes (the families found are printed).
"""

import json
import random
import re
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from contextlib import ExitStack
from datetime import timedelta

import pytest
from django.utils import timezone
from redis import Redis
from websockets.sync.client import connect as websocket_connect

from common.formats import iso
from common.testing import ROOT, process_env
from leaderboard_site.settings.env import deployment_prefix
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

SLUG = "shared"
PLAYERS = 60
MATCHES = 600
SINGLES = 50  # of each slice, sent one per request (the single-result endpoint and its own enqueue)
EVENTS = ScoreEvent._meta.db_table


def workers_answering(service: Service) -> list[str]:
    """The workers that answer `celery inspect ping` sent with the service's settings."""
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "leaderboard_site", "inspect", "ping", "--json", "--timeout", "2"],
        cwd=ROOT,
        env=process_env(**service.env),
        capture_output=True,
        timeout=60,
    )
    return sorted(json.loads(done.stdout or b"{}"))


def family(rest: str) -> str:
    """A key without its prefix, its variable parts (ids, hashes, dates) as `*`: `b:*`, `dd:*`,
    `celery:_kombu.binding.celery.pidbox`, `asgi:group:*`."""
    parts = rest.split(":")
    head = parts[0]
    if head in {"celery", "cache"} and len(parts) > 1:
        return f"{head}:{re.sub(r'[0-9a-f]{8,}', '*', parts[1])}" + (":*" if len(parts) > 2 else "")
    if head.startswith("asgi"):
        return "asgi:" + parts[1] + ":*" if len(parts) > 2 else re.sub(r"\..*", ".*", head)
    return head + (":*" if len(parts) > 1 else "")


def test_two_deployments_on_one_redis_never_meet():
    redis = PrivateRedis()
    dbs = [ScratchDatabase(), ScratchDatabase()]
    services = [
        Service(
            DATABASE_URL=db.url,
            REDIS_URL=redis.url,
            CELERY_BROKER_URL=redis.url,
            REDIS_KEY_PREFIX="",  # each named after its own database, as by default
            # The buckets on (their keys are under the prefix too), too large to hold anything back.
            KEY_RATE_PER_S="100000",
            KEY_RATE_BURST="100000",
            PLAYER_BUCKET_BURST="100000",
            PLAYER_BUCKET_REFILL_S="1",
            RECONCILE_INTERVAL_S="3600",  # no scheduled repair behind the test's back
        )
        for db in dbs
    ]
    sockets = ExitStack()
    try:
        redis.start()
        keys = []
        for db, service in zip(dbs, services, strict=True):
            db.create()
            manage("migrate", "--noinput", **service.env)
            start = iso(timezone.now() - timedelta(days=1))
            created = json.loads(
                manage("create_game", SLUG, "--name", "Shared", "--season-start", start, **service.env)
            )
            assert created == {"game": SLUG, "season": 1}
            keys.append(json.loads(manage("create_server_key", SLUG, **service.env)))
        for service in services:
            service.start()
        prefixes = [deployment_prefix(db.url) for db in dbs]
        assert prefixes[0] != prefixes[1]

        # A live board socket on each: its channel layer's keys, and a push to check below.
        live = []
        for service in services:
            url = f"ws://127.0.0.1:{service.port}/ws/games/{SLUG}/boards/all/?region=global"
            socket = sockets.enter_context(websocket_connect(url))
            assert json.loads(socket.recv(timeout=10))["type"] == "top"
            live.append(socket)

        # The same match ids and players to both; the second service's points are other ones.
        rng = random.Random(2)
        played = iso(timezone.now().replace(microsecond=0) - timedelta(seconds=5))
        plan = [(str(uuid.uuid4()), f"p{rng.randrange(PLAYERS)}", rng.randint(1, 500)) for _ in range(MATCHES)]
        sent = [
            [
                {
                    "match_id": match_id,
                    "played_at": played,
                    "duration_s": 300,
                    "results": [{"player_id": player, "points": points if i == 0 else 1000 + 3 * points}],
                }
                for match_id, player, points in plan
            ]
            for i in range(2)
        ]
        expected = [Counter(), Counter()]
        for i, matches in enumerate(sent):
            for match in matches:
                [result] = match["results"]
                expected[i][result["player_id"]] += result["points"]
        # Interleaved, a slice to each in turn: both queues and both sets of markers busy at once.
        step = MATCHES // 4
        for start in range(0, MATCHES, step):
            for i, service in enumerate(services):
                answers = send_matches(service.port, SLUG, keys[i], sent[i][start : start + step], singles=SINGLES)
                assert Counter(answers.values()) == {(202, ""): step}
        for db in dbs:
            assert (
                wait_until(lambda db=db: events_applied(db.url, MATCHES), since=time.monotonic(), timeout=30)
                is not None
            )

        # Both ledgers number their events from 1: the same ids, other results.
        ids = [{int(r[0]) for r in ledger_query(db.url, f"SELECT id FROM {EVENTS}")} for db in dbs]
        assert ids[0] == ids[1] == set(range(1, MATCHES + 1))

        for i, (db, service) in enumerate(zip(dbs, services, strict=True)):
            assert ledger_totals(db.url) == expected[i]
            top = board_entries(service.port, SLUG)
            assert dict(top) == expected[i], f"service {i}: its board is not its ledger"
            # A player read and the histogram agree too.
            player, score = top[len(top) // 2]
            status, data = get_json(service.port, f"/api/v1/games/{SLUG}/boards/all/players/{player}")
            assert status == 200 and data["score"] == score, data
            status, data = get_json(service.port, f"/api/v1/games/{SLUG}/boards/all/distribution")
            assert status == 200 and data["total"] == len(expected[i]), data
            # Every board of the game equals the ledger, member by member (the service's own view).
            boards_equal_ledger(SLUG, **service.env)

        # The live push each socket got last is its own service's top 10.
        for i, socket in enumerate(live):
            last = None
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    last = json.loads(socket.recv(timeout=2.5))
                except TimeoutError:
                    if last is not None:
                        break
            assert last is not None, f"service {i}: no push"
            assert [(e["player_id"], e["score"]) for e in last["entries"]] == board_entries(
                services[i].port, SLUG, n=10
            )

        # Celery's remote control (pub/sub, not keys) reaches one deployment's worker only.
        repliers = [workers_answering(service) for service in services]
        print(f"\ncelery inspect ping, each deployment: {repliers}")
        assert [len(r) for r in repliers] == [1, 1] and repliers[0] != repliers[1], repliers

        # Every key in the Redis belongs to one of the two deployments.
        shared = Redis.from_url(redis.url, decode_responses=True)
        everything = [str(k) for k in shared.scan_iter(count=1000)]
        shared.close()
        families: dict[str, Counter[str]] = defaultdict(Counter)
        strays = []
        for key in everything:
            owner = next((p for p in prefixes if key.startswith(p + ":")), None)
            if owner is None:
                strays.append(key)
            else:
                families[owner][family(key[len(owner) + 1 :])] += 1
        print(f"{len(everything)} keys in the shared Redis")
        for prefix in prefixes:
            print(f"{prefix}: {dict(sorted(families[prefix].items()))}")
        assert strays == [], strays
        for prefix in prefixes:
            # Boards, markers, rate buckets, the Celery queue's bindings, the channel layer, metrics.
            assert {"b:*", "dd:*", "rl:*", "epoch", "metrics"} <= set(families[prefix]), families[prefix]
            assert any(f.startswith("celery:") for f in families[prefix]), families[prefix]
            assert any(f.startswith("asgi") for f in families[prefix]), families[prefix]
        assert all(service.alive() for service in services)
    finally:
        sockets.close()
        for service in services:
            service.stop()
        redis.close()
        for db in dbs:
            db.drop()
