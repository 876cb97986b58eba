"""Where the CPU of one signed batch goes, in process: the accepting side (the batch view's own
functions: signature, parse, validation, `matches_submit`) and the worker side
(`events_apply_by_id`), with no HTTP server, no load generator and no other process competing.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/leaderboard \\
        .venv/bin/python bench/accept_profile.py [--batches 40] [--batch 500] [--profile accept|apply]
            [--tournament]

For each side it prints the wall time per batch, the CPU this process spent per event (Python) and
the wall time not spent on this process's CPU (PostgreSQL and Redis round trips, their server time
included), and PostgreSQL's own share: the CPU of this connection's server process (its
/proc/PID/schedstat, so the database must run on this machine) and the WAL it wrote
(`pg_current_wal_insert_lsn`), per event. `--statements` gives each SQL statement's wall time,
server CPU and WAL (per call and per event of the run); `--profile` adds cProfile's top functions
of that side. A fresh game each run, with the anti-cheat as shipped. Use a database of its own: the
game and its rows stay.
"""

import argparse
import cProfile
import json
import os
import pstats
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from _common import match, now_iso, player_id, region_of, signed_headers  # noqa: E402
from django.test import RequestFactory  # noqa: E402
from django.urls import resolve  # noqa: E402

from anticheat.services import server_key_create  # noqa: E402
from scoring import services  # noqa: E402
from scoring.models import EventStatus, ScoreEvent  # noqa: E402
from scoring.outbox import events_apply_by_id  # noqa: E402
from seasons.services import game_create  # noqa: E402


class PgMeter:
    """The server side of this process's database connection: its CPU time (ns, from the backend's
    /proc/PID/schedstat) and the WAL insert position (bytes). `before` reads the WAL first and the
    CPU last, `after` the CPU first: the probe's own query falls outside the window."""

    @staticmethod
    def _raw():
        from django.db import connection

        connection.ensure_connection()
        return connection.connection

    def _cpu(self, raw) -> int:
        with open(f"/proc/{raw.info.backend_pid}/schedstat") as f:
            return int(f.read().split()[0])

    def _wal(self, raw) -> int:
        return int(raw.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()[0])

    def before(self) -> tuple[int, int]:
        raw = self._raw()
        wal = self._wal(raw)
        return self._cpu(raw), wal

    def after(self, start: tuple[int, int]) -> tuple[float, int]:
        """(server CPU seconds, WAL bytes) since `start`."""
        raw = self._raw()
        cpu = self._cpu(raw)
        return (cpu - start[0]) / 1e9, self._wal(raw) - start[1]


def vacuum_measure(meter: PgMeter, figures: dict[str, float], *, events: int) -> None:
    """VACUUM the tables whose rows the run left dead (the ledger: the applied flag's UPDATE made a
    new version of each row; the outbox: a deleted row per event), the server's CPU and WAL per
    event: what autovacuum (or the relay) pays for them later."""
    from django.db import connection

    from scoring import models

    tables = [ScoreEvent._meta.db_table]
    if hasattr(models, "UnappliedEvent"):
        tables.append(models.UnappliedEvent._meta.db_table)
    cpu = wal = 0.0
    for table in tables:
        start = meter.before()
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM {table}")
        spent = meter.after(start)
        cpu, wal = cpu + spent[0], wal + spent[1]
    figures.update(vacuum_pg_cpu_us=1e6 * cpu / events, vacuum_pg_wal_b=wal / events)
    print(
        f"vacuum ({', '.join(tables)}): per event PostgreSQL {figures['vacuum_pg_cpu_us']:.1f} us CPU, "
        f"{figures['vacuum_pg_wal_b']:.0f} B of WAL"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--profile", choices=["accept", "apply"], help="cProfile that side")
    parser.add_argument("--top", type=int, default=35)
    parser.add_argument("--statements", action="store_true", help="wall time per SQL statement kind")
    parser.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE the inserts of one batch (rolled back)")
    parser.add_argument("--task", type=int, default=2000, help="events per apply call (the worker's task)")
    parser.add_argument("--json", action="store_true", help="a last line `json: {...}` with the figures")
    parser.add_argument(
        "--vacuum", action="store_true", help="then VACUUM what the run left dead (the ledger, the outbox), timed"
    )
    parser.add_argument(
        "--tournament", action="store_true", help="every match names one active tournament (best, no limits)"
    )
    args = parser.parse_args()

    from datetime import timedelta

    from django.utils import timezone

    game, _ = game_create(
        slug=f"prof-{random.randrange(1 << 30):x}", name="Profile", season_start=timezone.now() - timedelta(days=1)
    )
    key = server_key_create(game=game)
    if args.tournament:
        from competitions.models import Tournament

        start = timezone.now() - timedelta(minutes=1)
        Tournament.objects.create(
            game=game, slug="cup", title="Cup", starts_at=start, duration_s=86400, created_at=start
        )
    secret = key.secret
    services.apply_soon = lambda ids: None  # the worker side is timed below, not by a queue
    factory = RequestFactory()
    rng = random.Random(1)
    path = f"/api/v1/games/{game.slug}/matches/batch"
    view = resolve(path).func  # the batch operation's Django view (scoring/apis.py)
    bodies = []
    for _ in range(args.batches):
        played = now_iso()
        ms = []
        for _ in range(args.batch):
            n = rng.randrange(1, args.players + 1)
            ms.append(match(played, [(player_id(n), rng.randint(0, 1000), region_of(n))]))
            if args.tournament:
                ms[-1]["tournaments"] = ["cup"]
        bodies.append(json.dumps({"matches": ms}).encode())

    profiler = cProfile.Profile()
    meter = PgMeter()
    # (side, statement): (wall s, server CPU s, WAL bytes) of each call
    timings: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    counting = [False]  # the warm-up batches are not counted
    side = ["accept"]

    def measured(label: str, call):
        if not counting[0]:
            return call()
        start = meter.before()
        t0 = time.perf_counter()
        try:
            return call()
        finally:
            wall = time.perf_counter() - t0
            cpu, wal = meter.after(start)
            timings.setdefault((side[0], label), []).append((wall, cpu, wal))

    def timed(execute, sql, params, many, context):
        label = " ".join(str(sql).split())[:70]
        return measured(label, lambda: execute(sql, params, many, context))

    explain_now = [False]
    if args.explain:
        import common.db

        real_insert = common.db._insert

        def explained(raw, table, columns, rows, **kw):
            if explain_now[0] and rows:
                raw.execute("SAVEPOINT explain")
                real_insert(raw, table, columns, rows, **kw)
                sql = raw._query.query.decode() if hasattr(raw, "_query") and raw._query else None
                raw.execute("ROLLBACK TO SAVEPOINT explain")
                if sql:
                    raw.execute("SAVEPOINT explain")
                    raw.execute(f"EXPLAIN (ANALYZE, BUFFERS, WAL) {sql}")
                    print(f"--- {table}\n" + "\n".join(r[0] for r in raw.fetchall()))
                    raw.execute("ROLLBACK TO SAVEPOINT explain")
            return real_insert(raw, table, columns, rows, **kw)

        common.db._insert = explained
    if args.statements:
        from django.db import connection

        import common.db

        connection.execute_wrappers.append(timed)

        def wrap(module, name, label_of):
            inner = getattr(module, name)

            def outer(*a, **kw):
                return measured(label_of(a, kw), lambda: inner(*a, **kw))

            setattr(module, name, outer)

        wrap(common.db, "_insert", lambda a, kw: f"INSERT INTO {a[1]} (json_to_recordset)")
        wrap(services, "copy_rows", lambda a, kw: f"COPY {a[0]}")
        wrap(services, "_claim_submissions", lambda a, kw: "claims (all of it)")
        wrap(services, "_season_totals_add", lambda a, kw: "season totals (all of it)")
        wrap(services, "players_register", lambda a, kw: "players_register (all of it)")
        wrap(services, "season_regions_fix", lambda a, kw: "season_regions_fix (all of it)")
        wrap(services, "results_judge", lambda a, kw: "results_judge (all of it)")
    figures: dict[str, float] = {}
    before = ScoreEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    wall = cpu = 0.0
    pg_cpu, pg_wal = 0.0, 0
    for i, body in enumerate(bodies):
        request = factory.post(
            path,
            data=body,
            content_type="application/json",
            **{
                f"HTTP_{k.upper().replace('-', '_')}": v
                for k, v in signed_headers(key.key_id, secret, path, body).items()
                if k != "Content-Type"
            },
        )
        if args.profile == "accept" and i >= 2:
            profiler.enable()
        explain_now[0] = i == len(bodies) - 1
        counting[0] = i >= 2  # the first ones warm caches and connections
        start = meter.before()
        t0, c0 = time.perf_counter(), time.process_time()
        response = view(request, game=game.slug)
        response.render()
        t1, c1 = time.perf_counter(), time.process_time()
        server = meter.after(start)
        profiler.disable()
        assert response.status_code == 200, response.content[:300]
        if i >= 2:
            wall += t1 - t0
            cpu += c1 - c0
            pg_cpu, pg_wal = pg_cpu + server[0], pg_wal + server[1]
    n = (len(bodies) - 2) * args.batch
    figures.update(
        accept_ms_batch=1000 * wall / (len(bodies) - 2),
        accept_cpu_us=1e6 * cpu / n,
        accept_wait_us=1e6 * (wall - cpu) / n,
        accept_pg_cpu_us=1e6 * pg_cpu / n,
        accept_pg_wal_b=pg_wal / n,
    )
    print(
        f"accept: {figures['accept_ms_batch']:.1f} ms a batch of {args.batch}; per event: "
        f"{figures['accept_cpu_us']:.0f} us CPU here, {figures['accept_wait_us']:.0f} us waiting; "
        f"PostgreSQL {figures['accept_pg_cpu_us']:.1f} us CPU, {figures['accept_pg_wal_b']:.0f} B of WAL"
    )
    ids = list(  # this run's (a ledger seeded by bench/_ledger.py may share the game's id)
        ScoreEvent.objects.filter(game=game, id__gt=before, status=EventStatus.ACCEPTED)
        .order_by("id")
        .values_list("id", flat=True)
    )
    wall = cpu = 0.0
    pg_cpu, pg_wal = 0.0, 0
    side[0] = "apply"
    chunks = [ids[i : i + args.task] for i in range(0, len(ids), args.task)]
    for i, chunk in enumerate(chunks):
        if args.profile == "apply" and i >= 1:
            profiler.enable()
        counting[0] = i >= 1
        start = meter.before()
        t0, c0 = time.perf_counter(), time.process_time()
        events_apply_by_id(event_ids=chunk, dedup_ttl_s=3600)
        t1, c1 = time.perf_counter(), time.process_time()
        server = meter.after(start)
        profiler.disable()
        if i >= 1:
            wall += t1 - t0
            cpu += c1 - c0
            pg_cpu, pg_wal = pg_cpu + server[0], pg_wal + server[1]
    n_applied = max(1, sum(len(c) for c in chunks[1:]))
    figures.update(
        apply_ms_task=1000 * wall / max(1, len(chunks) - 1),
        apply_cpu_us=1e6 * cpu / n_applied,
        apply_wait_us=1e6 * (wall - cpu) / n_applied,
        apply_pg_cpu_us=1e6 * pg_cpu / n_applied,
        apply_pg_wal_b=pg_wal / n_applied,
    )
    print(
        f"apply: {figures['apply_ms_task']:.1f} ms a task of {args.task}; per event: "
        f"{figures['apply_cpu_us']:.0f} us CPU here, {figures['apply_wait_us']:.0f} us waiting; "
        f"PostgreSQL {figures['apply_pg_cpu_us']:.1f} us CPU, {figures['apply_pg_wal_b']:.0f} B of WAL"
    )
    if args.vacuum:
        vacuum_measure(meter, figures, events=len(ids))
    if timings:
        print("    wall ms   calls   per call: ms, server CPU ms, WAL KB;  per event: server CPU us, WAL B")
    for (where, label), spent in sorted(timings.items(), key=lambda item: (item[0][0], -sum(x[0] for x in item[1]))):
        calls = len(spent)
        total_wall, total_cpu, total_wal = (sum(x[k] for x in spent) for k in range(3))
        events = n if where == "accept" else n_applied
        print(
            f"{1000 * total_wall:10.1f} {calls:7d}   {1000 * total_wall / calls:7.2f} {1000 * total_cpu / calls:7.2f} "
            f"{total_wal / calls / 1024:7.1f};  {1e6 * total_cpu / events:6.2f} {total_wal / events:7.1f}   "
            f"{where}: {label}"
        )
        figures[f"{where}: {label}"] = 1e6 * total_cpu / events
        figures[f"{where} WAL: {label}"] = total_wal / events
    if args.json:
        print("json: " + json.dumps(figures))
    if args.profile:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
