"""Redis fails over (issue 26, item 5): a Sentinel-managed primary and replica, the primary killed
(SIGKILL) under a steady load of writes and reads against real web, worker and beat processes that
know Redis only through the sentinels (REDIS_SENTINEL, REDIS_SENTINEL_MASTER).

The replica is cut off for the last moment before the kill (held still, and dropped by the primary),
so the writes of that moment never reach it: the promoted replica really lacks some of what the old
primary applied (board writes, dedup markers, apply tasks in the queue).

- reads answer 503 (or, once the replica answers, 200) while there is no primary, and 200 within
  5 s of the promotion;
- web, worker and beat carry on by themselves (the worker applies the results sent after the
  failover, the relay resends those whose apply task was lost with the old primary's queue);
- the failover is noticed and the boards compared with the ledger in full: within 60 s of the load
  stopping every board equals the ledger, and every match answered 202 is on its boards.

Prints its figures (kill to promotion, kill to the first 200 read); docs/operations.md quotes them.
"""

import json
import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
import redis
from django.test import override_settings
from django.utils import timezone

from anticheat.services import game_rules_set
from common.keys import metrics_key
from common.redis_sentinel import LocalSentinels
from common.testing import ROOT, free_port, start_beat, start_web, start_worker, stop
from leaderboard_site.settings.env import sentinel_url
from scoring.selectors import boards_diff
from scoring.testing import make_game, make_key
from scoring.testing import unapplied as outbox_unapplied

from .outage_tools import Load, boards_equal_ledger, wait_until
from .test_outages import beat_and_worker_run, exit_codes, figures, ledger_agrees, log_tails

pytestmark = [pytest.mark.serial, pytest.mark.timeout(180)]

READS_BACK_S = 5.0  # after the promotion, reads answer 200 within this (the bound)
BOARDS_BACK_S = 60.0  # after the load stops, every board equals the ledger within this
LOAD_AFTER_S = 10.0  # the load goes on this long after the promotion
CUT_OFF_S = 0.7  # the primary's writes of this moment before the kill never reach the replica


def cut_replica_off(group: LocalSentinels, primary: int, replica: int) -> None:
    """The replica stops receiving: held still (SIGSTOP) and dropped by the primary, which goes on
    taking writes that no replica gets (as a lagging or cut-off replica would miss them)."""
    group.pause(replica)
    with redis.Redis(port=primary, socket_timeout=2) as r:
        r.client_kill_filter(_type="replica")


@pytest.mark.django_db(transaction=True)
def test_the_redis_primary_killed_under_load(tmp_path, monkeypatch):
    logs = tmp_path / "process-logs"
    monkeypatch.setenv("TEST_PROCESS_LOGS", str(logs))
    group = LocalSentinels(tmp_path / "redis-ha").start()
    url = sentinel_url([("127.0.0.1", port) for port in group.sentinel_ports], "redis://")
    env = {**group.env(), "CELERY_BROKER_URL": url, "FAILOVER_RECHECK_S": "5"}
    port = free_port()
    procs = []
    try:
        with override_settings(REDIS_URL=url, CELERY_BROKER_URL=url, REDIS_SENTINEL_MASTER=group.master_name):
            game = make_game("failover", start=timezone.now() - timedelta(days=1))
            game_rules_set(game=game, player_burst=50, player_refill_s=1, key_rate_per_s=500, key_burst=1000)
            key = make_key(game)
            procs = [start_beat(**env), start_worker(**env), start_web(port, **env)]
            with Load(port=port, game=game.slug, key_id=key.key_id, secret=key.secret) as load:
                started = time.monotonic()
                assert wait_until(beat_and_worker_run, since=started, timeout=60) is not None
                time.sleep(max(0.0, 5 - (time.monotonic() - started)))
                old = group.primary()
                assert old is not None and group.replica_in_sync()
                [replica] = [p for p in group.redis_ports if p != old]
                cut_replica_off(group, old, replica)
                time.sleep(CUT_OFF_S)
                killed = time.monotonic()
                group.kill(old)
                group.resume(replica)
                new = group.wait_promoted(old, timeout=30)
                promoted = time.monotonic()
                time.sleep(LOAD_AFTER_S)
            stopped = time.monotonic()
            timeline: list[tuple[float, int, int]] = []

            def boards_back() -> bool:
                left, diff = outbox_unapplied().count(), boards_diff(game=game, now=timezone.now())
                timeline.append((round(time.monotonic() - stopped, 1), left, sum(len(d) for d in diff.values())))
                return left == 0 and not diff

            back_s = wait_until(boards_back, since=stopped, timeout=BOARDS_BACK_S, step=1.0)
            counters = redis.Redis(port=new, decode_responses=True).hgetall(metrics_key())
            exits = exit_codes(dict(zip(("beat", "worker", "web"), procs, strict=True)))

        reads = load.between(killed, time.monotonic(), "read")
        first_200 = min((a.sent + a.took for a in reads if a.status == 200), default=None)
        after = [a for a in reads if a.sent > promoted + READS_BACK_S]
        print()
        print(f"primary killed: promoted {promoted - killed:.2f} s later (port {old} -> {new})")
        print(f"first read answered 200 {None if first_200 is None else round(first_200 - killed, 2)} s after the kill")
        print(figures("before, reads", load.between(0, killed, "read")))
        print(figures("kill to promotion, reads", load.between(killed, promoted, "read")))
        print(figures("kill to promotion, writes", [a for a in load.between(killed, promoted) if a.kind != "read"]))
        print(figures("after the promotion, reads", load.between(promoted, stopped, "read")))
        print(f"after the load stopped (s, unapplied, entries differing): {timeline[:: max(1, len(timeline) // 10)]}")
        print(f"boards equal the ledger {back_s} s after the load stopped; counters: {counters}")

        if any(code is not None for code in exits.values()):
            print(log_tails(logs, [name for name, code in exits.items() if code is not None]))
        assert exits == {"beat": None, "worker": None, "web": None}, exits
        assert [a for a in load.answers if a.status >= 500 and a.status != 503] == []
        allowed = {(503, "boards_unavailable"), (200, ""), (404, "not_ranked")}
        assert {(a.status, a.code) for a in reads} <= allowed
        assert first_200 is not None and first_200 - promoted < READS_BACK_S
        assert after and all(a.status != 503 for a in after), figures("reads 5 s after the promotion", after)
        # The failover was noticed and the boards compared with the ledger in full.
        assert int(counters.get("redis_failovers", 0)) >= 1, counters
        # The promoted replica lacked applied results (cut off), and the check put them back.
        assert int(counters.get(f"reconcile_drift:{game.slug}", 0)) > 0, counters
        ledger_agrees(game, load.answers)
        assert back_s is not None and back_s < BOARDS_BACK_S, timeline[-5:]
        boards_equal_ledger(game.slug, **env)
    finally:
        for proc in procs:
            stop(proc)
        group.stop()


@pytest.mark.parametrize(
    ("sentinels", "master", "message"),
    [
        ("127.0.0.1:26379", "", "REDIS_SENTINEL_MASTER must name the primary"),
        ("127.0.0.1", "leaderboard", "REDIS_SENTINEL must be a host:port list"),
    ],
)
def test_a_sentinel_setting_that_cannot_work_stops_the_start(sentinels, master, message):
    env = {**os.environ, "REDIS_SENTINEL": sentinels, "REDIS_SENTINEL_MASTER": master}
    env["DJANGO_SETTINGS_MODULE"] = "leaderboard_site.settings.base"
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and message in done.stderr, done.stderr[-500:]


def test_every_client_is_configured_for_the_sentinels():
    """With the sentinels set, the broker, the channel layer and the cache are pointed at them, with
    REDIS_URL's database and password (the primary's); the service's own clients read them back.
    (The clients at work: the failover test above.)"""
    env = {**os.environ, "REDIS_SENTINEL": "10.0.0.5:26379,10.0.0.6:26380", "REDIS_SENTINEL_MASTER": "lb"}
    env.update(REDIS_URL="redis://:s3cret@x:6379/3", DJANGO_SETTINGS_MODULE="leaderboard_site.settings.base")
    env.pop("CELERY_BROKER_URL", None)  # it follows REDIS_URL unless set
    code = (
        "import json; from django.conf import settings as s; from common.redis import sentinels_of; "
        "layer = s.CHANNEL_LAYERS['default']['CONFIG']['hosts'][0]; "
        "print(json.dumps([s.REDIS_URL, s.CELERY_BROKER_URL, s.CELERY_BROKER_TRANSPORT_OPTIONS['master_name'], "
        "layer['sentinels'], layer['master_name'], layer['password'], s.CACHES['default']['LOCATION'], "
        "s.CACHES['default']['OPTIONS']['SENTINELS'], sentinels_of(s.REDIS_URL)]))"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-500:]
    url = "sentinel://:s3cret@10.0.0.5:26379/3;sentinel://:s3cret@10.0.0.6:26380/3"
    sentinels = [["10.0.0.5", 26379], ["10.0.0.6", 26380]]
    assert json.loads(done.stdout) == [
        url,
        url,
        "lb",
        sentinels,
        "lb",
        "s3cret",
        "redis://:s3cret@lb/3",
        sentinels,
        [sentinels, {"db": 3, "password": "s3cret"}],
    ]
