"""Where the CPU of one signed batch goes, in process: the accepting side (the batch view's own
functions: signature, parse, validation, `matches_submit`) and the worker side
(`events_apply_by_id`), with no HTTP server, no load generator and no other process competing.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/leaderboard \\
        .venv/bin/python bench/accept_profile.py [--batches 40] [--batch 500] [--profile accept|apply]

For each side it prints the wall time per batch, the CPU this process spent per event (Python) and
the wall time not spent on this process's CPU (PostgreSQL and Redis round trips, their server time
included). `--profile` adds cProfile's top functions of that side. A fresh game each run, with the
anti-cheat as shipped. Use a database of its own: the game and its rows stay.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--profile", choices=["accept", "apply"], help="cProfile that side")
    parser.add_argument("--top", type=int, default=35)
    parser.add_argument("--statements", action="store_true", help="wall time per SQL statement kind")
    parser.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE the inserts of one batch (rolled back)")
    args = parser.parse_args()

    from datetime import timedelta

    from django.utils import timezone

    game, _ = game_create(
        slug=f"prof-{random.randrange(1 << 30):x}", name="Profile", season_start=timezone.now() - timedelta(days=1)
    )
    key = server_key_create(game=game)
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
        bodies.append(json.dumps({"matches": ms}).encode())

    profiler = cProfile.Profile()
    timings: dict[str, list[float]] = {}

    def timed(execute, sql, params, many, context):
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            label = " ".join(str(sql).split())[:70]
            timings.setdefault(label, []).append(time.perf_counter() - t0)

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
                t0 = time.perf_counter()
                try:
                    return inner(*a, **kw)
                finally:
                    timings.setdefault(label_of(a, kw), []).append(time.perf_counter() - t0)

            setattr(module, name, outer)

        wrap(common.db, "_insert", lambda a, kw: f"INSERT INTO {a[1]} (json_to_recordset)")
        wrap(services, "copy_rows", lambda a, kw: f"COPY {a[0]}")
        wrap(services, "_claim_submissions", lambda a, kw: "claims (all of it)")
        wrap(services, "_season_totals_add", lambda a, kw: "season totals (all of it)")
        wrap(services, "players_register", lambda a, kw: "players_register (all of it)")
        wrap(services, "season_regions_fix", lambda a, kw: "season_regions_fix (all of it)")
        wrap(services, "results_judge", lambda a, kw: "results_judge (all of it)")
    if True:
        wall = cpu = 0.0
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
            t0, c0 = time.perf_counter(), time.process_time()
            response = view(request, game=game.slug)
            response.render()
            t1, c1 = time.perf_counter(), time.process_time()
            profiler.disable()
            assert response.status_code == 200, response.content[:300]
            if i >= 2:  # the first ones warm caches and connections
                wall += t1 - t0
                cpu += c1 - c0
        n = (len(bodies) - 2) * args.batch
        print(
            f"accept: {1000 * wall / (len(bodies) - 2):.1f} ms a batch of {args.batch}; "
            f"per event: {1e6 * cpu / n:.0f} us CPU here, {1e6 * (wall - cpu) / n:.0f} us waiting"
        )
        ids = list(
            ScoreEvent.objects.filter(game=game, status=EventStatus.ACCEPTED)
            .order_by("id")
            .values_list("id", flat=True)
        )
        wall = cpu = 0.0
        chunks = [ids[i : i + 2000] for i in range(0, len(ids), 2000)]
        for i, chunk in enumerate(chunks):
            if args.profile == "apply" and i >= 1:
                profiler.enable()
            t0, c0 = time.perf_counter(), time.process_time()
            events_apply_by_id(event_ids=chunk, dedup_ttl_s=3600)
            t1, c1 = time.perf_counter(), time.process_time()
            profiler.disable()
            if i >= 1:
                wall += t1 - t0
                cpu += c1 - c0
        n = sum(len(c) for c in chunks[1:])
        print(
            f"apply: {1000 * wall / max(1, len(chunks) - 1):.1f} ms a task of 2000; "
            f"per event: {1e6 * cpu / max(1, n):.0f} us CPU here, {1e6 * (wall - cpu) / max(1, n):.0f} us waiting"
        )
        for label, spent in sorted(timings.items(), key=lambda item: -sum(item[1])):
            print(f"{1000 * sum(spent):9.1f} ms {len(spent):6d}x {label}")
        if args.profile:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
