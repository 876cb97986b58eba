"""PostgreSQL fails over (issue 26, item 4): the service runs on a pg_auto_failover formation (a
monitor, a primary and a synchronous secondary, scripts/pg_ha.sh) through its multi-host
DATABASE_URL (target_session_attrs=read-write). The primary is killed (SIGKILL to its PostgreSQL
and to its keeper, which would otherwise start it again) under a steady load of signed writes and
board reads:

- writes answer 503 `ledger_unavailable` (never another 5xx, never later than 5 s) until the
  secondary is promoted, then are accepted again without anyone doing anything;
- every result answered 2xx is in the new primary's ledger and on the boards;
- reads answer from Redis throughout;
- the dead node's keeper started again, it rejoins as the synchronous secondary.

It prints the time from the kill to the promotion and to the first accepted write, and the rejoin's;
docs/operations.md ("High availability") quotes them.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.utils import timezone

from common.formats import iso
from common.testing import ROOT, free_port
from scoring.models import EventStatus, MatchSubmission, ScoreEvent, UnappliedEvent

from .outage_tools import Answer, Load, Service, boards_equal_ledger, manage, percentile, wait_until

pytestmark = [pytest.mark.serial, pytest.mark.timeout(300)]

ANSWER_BOUND_S = 5.0  # no answer later than this, during the failover or after (the bound)
FAILOVER_BOUND_S = 30.0  # kill -> first accepted write; measured ~5 s with pg_ha.sh's timings
SCRIPT = ROOT / "scripts" / "pg_ha.sh"


class Formation:
    """scripts/pg_ha.sh's formation in a temp folder, on free ports: as an operator starts it."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="lb-pgha-"))
        self.monitor_port, *self.ports = free_port(), free_port(), free_port()
        self.env = {
            **os.environ,
            "PG_HA_DIR": str(self.dir),
            "PG_HA_MONITOR_PORT": str(self.monitor_port),
            "PG_HA_PORT_1": str(self.ports[0]),
            "PG_HA_PORT_2": str(self.ports[1]),
            "PG_HA_WAIT_S": "60",
        }

    def script(self, command: str, timeout: float = 150) -> str:
        done = subprocess.run(
            ["bash", str(SCRIPT), command], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if done.returncode != 0:
            raise RuntimeError(f"pg_ha.sh {command}: {done.stderr}{self.logs()}")
        return done.stdout

    def logs(self) -> str:
        return "".join(
            f"\n--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-30:])
            for log in sorted(self.dir.glob("*.log"))
        )

    def start(self) -> str:
        """The formation up (a primary, a secondary in sync); the service's DATABASE_URL."""
        return self.script("start").strip().splitlines()[-1]

    def monitor(self, sql: str) -> list[tuple[object, ...]]:
        url = f"postgresql://autoctl_node@127.0.0.1:{self.monitor_port}/pg_auto_failover?connect_timeout=2"
        with psycopg.connect(url, autocommit=True) as conn:
            return conn.execute(sql).fetchall()

    def states(self) -> dict[str, str]:
        """Each node's state as it reported it to the monitor."""
        return {
            str(name): str(state)
            for name, state in self.monitor("SELECT nodename, reportedstate FROM pgautofailover.node")
        }

    def primary(self) -> str:
        [name] = [name for name, state in self.states().items() if state == "primary"]
        return name

    def kill(self, node: str) -> None:
        """SIGKILL to the node's keeper and everything in its session (its PostgreSQL, the backends)
        and to its postmaster by its pid file: a machine gone, nothing left to restart it."""
        postmaster = int((self.dir / node / "postmaster.pid").read_text().splitlines()[0])
        os.killpg(int((self.dir / f"{node}.pid").read_text()), signal.SIGKILL)
        try:
            os.kill(postmaster, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        try:
            self.script("stop", timeout=120)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def formation():
    if shutil.which("pg_autoctl") is None:
        done = subprocess.run(["bash", str(SCRIPT), "install"], capture_output=True, text=True, timeout=600)
        if shutil.which("pg_autoctl") is None:
            pytest.skip(f"pg_auto_failover (pg_autoctl) is not installed and could not be: {done.stderr.strip()}")
    formation = Formation()
    try:
        yield formation
    finally:
        formation.close()


def figures(label: str, answers: list[Answer]) -> str:
    took = [a.took for a in answers]
    statuses = Counter(f"{a.status} {a.code}".strip() if not a.error else a.error.split(":")[0] for a in answers)
    return (
        f"{label}: {len(answers)} answers {dict(statuses)}, p50 {percentile(took, 0.5) * 1000:.0f} ms, "
        f"max {max(took, default=0) * 1000:.0f} ms"
    )


def accepted(answer: Answer) -> bool:
    return any(200 <= status < 300 for status in answer.matches.values())


def services(database_url: str) -> subprocess.CompletedProcess[str]:
    """scripts/services.sh (what `make run` runs first) on a DATABASE_URL and this run's Redis."""
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": settings.REDIS_URL}
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "services.sh")], env=env, capture_output=True, text=True, timeout=60
    )


def test_services_starts_no_postgresql_for_a_formation_it_cannot_reach():
    down = f"postgresql://postgres@127.0.0.1:{free_port()},127.0.0.1:{free_port()}/leaderboard"
    done = services(down)
    assert done.returncode != 0
    assert "no node of the formation" in done.stderr and "not starting a PostgreSQL of our own" in done.stderr


def test_the_primary_killed_under_load_the_secondary_takes_over(formation):
    url = formation.start()
    done = services(url)
    assert done.returncode == 0 and "starting none of our own" in done.stderr, done.stderr
    # A key prefix of the test's own: the service's boards apart from other tests' on this Redis.
    env = {
        "DATABASE_URL": url,
        "REDIS_KEY_PREFIX": f"lbfailover{uuid.uuid4().hex[:6]}",
        "KEY_RATE_PER_S": "1000",
        "KEY_RATE_BURST": "2000",
    }
    manage("migrate", "--noinput", **env)
    slug = "failover"
    manage("create_game", slug, "--name", "Failover", "--season-start", iso(timezone.now() - timedelta(days=1)), **env)
    key = json.loads(manage("create_server_key", slug, **env))
    service = Service(**env)
    service.start()
    ledger_sql = (
        f"SELECT count(*) FILTER (WHERE o.event_id IS NULL), count(o.event_id) FROM {ScoreEvent._meta.db_table} e "
        f"LEFT JOIN {UnappliedEvent._meta.db_table} o ON o.event_id = e.id WHERE e.status = %s"
    )

    def ledger() -> tuple[int, int]:
        """(applied, unapplied) accepted results in the ledger of the node that is primary now."""
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                applied, unapplied = conn.execute(ledger_sql, [EventStatus.ACCEPTED.value]).fetchone()  # type: ignore[misc]
                return int(applied), int(unapplied)
        except psycopg.OperationalError:
            return 0, -1

    try:
        with Load(port=service.port, game=slug, key_id=key["key_id"], secret=key["secret"]) as load:
            started = time.monotonic()
            # The worker applies results (and so runs) before the kill.
            assert wait_until(lambda: ledger()[0] > 0, since=started, timeout=60) is not None, formation.logs()
            time.sleep(max(0.0, 4 - (time.monotonic() - started)))
            old = formation.primary()
            killed = time.monotonic()
            formation.kill(old)
            promoted_s = wait_until(
                lambda: any(s == "wait_primary" for n, s in formation.states().items() if n != old),
                since=killed,
                timeout=FAILOVER_BOUND_S,
            )

            def writes_accepted() -> bool:
                return any(accepted(a) for a in load.between(killed, time.monotonic()) if a.kind != "read")

            assert wait_until(writes_accepted, since=killed, timeout=FAILOVER_BOUND_S) is not None, formation.logs()
            resumed = time.monotonic()
            time.sleep(6)  # the load goes on on the new primary
        stopped = time.monotonic()
        drained_s = wait_until(lambda: ledger()[1] == 0, since=stopped, timeout=60)
        alive = service.alive()
        states = formation.states()

        answers = load.answers
        writes = [a for a in answers if a.kind != "read"]
        reads = [a for a in answers if a.kind == "read"]
        after_kill = [a for a in writes if a.sent >= killed]
        first_write_s = min(a.sent + a.took for a in after_kill if accepted(a)) - killed
        outage = [a for a in after_kill if a.sent + a.took < killed + first_write_s]
        print()
        print(f"formation after the kill of {old}: {states}")
        print(f"killed -> secondary promoted (reports wait_primary): {promoted_s} s")
        print(f"killed -> first write accepted: {first_write_s:.2f} s")
        last_503 = max((a.sent + a.took for a in after_kill if a.status == 503), default=killed) - killed
        print(f"killed -> last write answered 503: {last_503:.2f} s (each web process's pool finds the new primary)")
        print(figures("answered before the kill, writes", [a for a in writes if a.sent + a.took < killed]))
        print(figures("in flight at the kill, writes", [a for a in writes if a.sent < killed <= a.sent + a.took]))
        print(figures("kill -> first accepted write, writes", outage))
        print(figures("after, writes", [a for a in writes if a.sent >= killed + first_write_s]))
        print(figures("whole run, reads", reads))
        print(f"after the load stopped: every accepted result applied in {drained_s} s")

        assert alive, "a service process exited"
        assert [a for a in answers if a.error] == [], "a request got no HTTP answer (reset, timeout)"
        # Never a 5xx but 503, never an answer later than the bound.
        assert {(a.status, a.code) for a in answers if a.status >= 500} <= {(503, "ledger_unavailable")}
        assert max(a.took for a in answers) < ANSWER_BOUND_S
        # Until the promotion, writes are refused (the ledger cannot be reached), cleanly.
        assert outage and {(a.status, a.code) for a in outage} <= {(503, "ledger_unavailable")}
        # Then they resume alone: the last seconds of the load, every write accepted.
        assert first_write_s < FAILOVER_BOUND_S and promoted_s is not None
        late = [a for a in writes if a.sent >= resumed + 2]
        assert late and all(a.status in (200, 202) for a in late), Counter(a.status for a in late)
        assert all(status == 202 for a in late for status in a.matches.values())
        # Reads answer from Redis all along (a player with no result yet is 404 not_ranked).
        assert reads and {(a.status, a.code) for a in reads} <= {(200, ""), (404, "not_ranked")}
        # Every 2xx is in the new primary's ledger, whole; every accepted result on the boards.
        with psycopg.connect(url, autocommit=True) as conn:
            stored = {str(m) for (m,) in conn.execute(f"SELECT match_id FROM {MatchSubmission._meta.db_table}")}
            [(with_events,)] = conn.execute(f"SELECT count(DISTINCT match_id) FROM {ScoreEvent._meta.db_table}")
        acknowledged = {m for a in answers for m, status in a.matches.items() if 200 <= status < 300}
        assert acknowledged and acknowledged <= stored, f"{len(acknowledged - stored)} acknowledged results lost"
        assert with_events == len(stored)
        # A 503 whose commit reached the secondary before the primary died is stored: its match
        # server's retry (same match id) is answered as a replay. Counted, not refused.
        refused_stored = {m for a in answers for m, status in a.matches.items() if status == 503} & stored
        print(f"answered 503 yet stored (a retry replays them): {len(refused_stored)}")
        assert drained_s is not None
        boards_equal_ledger(slug, **env)
        # What the on-call engineer does next: start the dead node's keeper again. It rewinds
        # itself and rejoins as the synchronous secondary (pg_ha.sh start waits for that, bounded).
        back = time.monotonic()
        formation.start()
        print(f"old primary back as secondary, in sync, {time.monotonic() - back:.1f} s after its keeper started")
        assert formation.states() == {old: "secondary", **{n: "primary" for n in states if n != old}}
    finally:
        service.stop()
