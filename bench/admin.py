#!/usr/bin/env python3
"""Review queue benchmark: the moderators' pages over a ledger of millions.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/lb_admin_bench \\
        .venv/bin/python bench/admin.py [--rows 10000000] [--pending 50000] [--games 40] [--repeat 5] [--no-seed]

Use a database of its own: the seed TRUNCATEs the ledger (create it, then `manage.py migrate`
with the same DATABASE_URL). It starts a private Redis (the boards the revocations correct and the
apply queue the approvals feed stay in it).

Seed (skipped with --no-seed): --games games with one season each; --rows results written by COPY
(4 players per match, accept times over the last 7 days, a few rejected and revoked), of which
--pending are `pending_review` (reasons rate, points_per_minute, matches_per_hour, anomaly), all
in the first 12 games; the secondary indexes are dropped during the COPY and built afterwards (as
one would load a ledger), then ANALYZE (no VACUUM: on this dev PostgreSQL autovacuum is off, so
no page is all-visible and index-only scans still visit the heap, the less favourable case).

Then, logged in as a member of `moderators` through Django's test client (the whole admin stack:
middleware, templates, every query), each page --repeat times after one warm-up: the queue as it
opens, filtered by game and by reason, searched by player id, page 2 and a page near the end, the
resolved list, an item's page (its evidence); then bulk approve and bulk revoke of 100 pending
items (one each) and a decision from an item's page. Prints ms per page (median and max) and the
machine's load average before and after.
"""

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")
os.environ.setdefault("LOG_LEVEL", "WARNING")

from leaderboard_site.testing_redis import start_private_redis

os.environ["REDIS_URL"] = start_private_redis()
os.environ.setdefault("REDIS_KEY_PREFIX", "adminbench")

import django

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from anticheat.models import AuditEntry, Ban  # noqa: E402
from scoring.ledger_partitions import partitions_ensure_between  # noqa: E402
from scoring.models import AnomalyScan, ScoreEvent, SeasonTotal, UnappliedEvent  # noqa: E402
from seasons.models import Game  # noqa: E402
from seasons.periods import week_label  # noqa: E402
from seasons.services import game_create  # noqa: E402

QUEUE = "/admin/scoring/reviewitem/"
TABLE = ScoreEvent._meta.db_table
COLUMNS = "game_id, season_id, match_id, player_id, points, played_at, accepted_at, duration_s, day, week, "
COLUMNS += "region, extra_boards, status, reason"
REASONS = ("rate", "points_per_minute", "anomaly", "matches_per_hour")
PENDING_GAMES = 12
BLOCK = 20_000


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def seed(*, rows: int, pending: int, games: int) -> None:
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            f"TRUNCATE {TABLE}, {UnappliedEvent._meta.db_table}, {SeasonTotal._meta.db_table}, "
            f"{AuditEntry._meta.db_table} RESTART IDENTITY"
        )
    AnomalyScan.objects.all().delete()
    Ban.objects.all().delete()
    now = datetime.now(UTC).replace(microsecond=0)
    made = {g.slug: g for g in Game.objects.filter(slug__startswith="mod-")}
    seasons: list[tuple[int, int]] = []
    for n in range(games):
        slug = f"mod-{n:03d}"
        if slug not in made:
            game_create(
                slug=slug,
                name=f"Moderation bench {n}",
                max_points_per_match=100_000,
                season_start=now - timedelta(days=10),
            )
        game = Game.objects.get(slug=slug)
        seasons.append((game.id, game.seasons.order_by("-starts_at").values_list("id", flat=True)[0]))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass "
            "AND contype = 'u'",
            [TABLE],
        )
        constraints = cursor.fetchall()
        for name, _ in constraints:
            cursor.execute(f'ALTER TABLE {TABLE} DROP CONSTRAINT "{name}"')
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexname NOT LIKE %s",
            [TABLE, "%pkey"],
        )
        indexes = cursor.fetchall()
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
    players = max(rows // 10, 1000)
    span_s = 7 * 86400
    start = now - timedelta(seconds=span_s)
    partitions_ensure_between(start, now)
    # Pending results: in the first PENDING_GAMES games only, spread evenly over the ledger.
    pending_share = pending / (rows * min(PENDING_GAMES, games) / games)
    stamps: dict[int, str] = {}
    days: dict[str, tuple[str, str]] = {}
    written = held = 0
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {TABLE} ({COLUMNS}) FROM STDIN") as copy:
        lines: list[str] = []
        for i in range(rows):
            m, j = divmod(i, 4)
            g = m % games
            game_id, season_id = seasons[g]
            second = i * span_s // rows
            stamp = stamps.get(second)
            if stamp is None:
                stamps.clear()
                moment = start + timedelta(seconds=second)
                stamp = stamps[second] = moment.strftime("%Y-%m-%d %H:%M:%S+00")
                day = stamp[:10]
                if day not in days:
                    days[day] = (day, week_label(moment.date()))
            day, week = days[stamp[:10]]
            h = f"{m:032x}"
            match_id = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
            player = f"p{(m * 4 + j) * 2654435761 % players:07d}"
            points = (i * 7919) % 5000 + 10
            bucket = (i * 2654435761) % 1_000_003
            if g < PENDING_GAMES and bucket < pending_share * 1_000_003 and held < pending:
                status, reason = "pending_review", REASONS[held % len(REASONS)]
                points += 20_000
                held += 1
            elif bucket % 997 == 0:
                status, reason = "rejected", "implausible"
            elif bucket % 1009 == 0:
                status, reason = "revoked", "revoked"
            else:
                status, reason = "accepted", ""  # applied: not in the outbox
            lines.append(
                f"{game_id}\t{season_id}\t{match_id}\t{player}\t{points}\t{stamp}\t{stamp}\t600\t{day}\t{week}\t"
                f"eu\t[]\t{status}\t{reason}\n"
            )
            if len(lines) >= BLOCK:
                copy.write("".join(lines))
                written += len(lines)
                lines.clear()
                if written % 1_000_000 == 0:
                    log(f"seed: {written:,} rows, {time.perf_counter() - started:.0f} s")
        copy.write("".join(lines))
    log(f"seed: {rows:,} rows ({held:,} pending) copied in {time.perf_counter() - started:.0f} s")
    built = time.perf_counter()
    with connection.cursor() as cursor:
        for name, definition in constraints:
            cursor.execute(f'ALTER TABLE {TABLE} ADD CONSTRAINT "{name}" {definition}')
            log(f"seed: constraint {name} built, {time.perf_counter() - built:.0f} s")
        for name, definition in indexes:
            cursor.execute(definition)
            log(f"seed: index {name} built, {time.perf_counter() - built:.0f} s")
        cursor.execute(f"ANALYZE {TABLE}")
    for game_id, _ in seasons[:PENDING_GAMES]:
        AnomalyScan.objects.create(
            game_id=game_id, limit=20_000, policy="0.9999/10000/7", computed_at=now, checked_from_id=0, checked_to_id=0
        )
    log(f"seed: done in {time.perf_counter() - started:.0f} s")


def moderator() -> User:
    user, _ = User.objects.get_or_create(username="bench-moderator", defaults={"is_staff": True})
    user.groups.add(Group.objects.get_or_create(name="moderators")[0])
    return user


def timed(client: Client, method: str, path: str, data: dict | None = None, *, expect: int = 200) -> tuple[float, int]:
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = client.get(path, data) if method == "GET" else client.post(path, data)
        elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != expect:
        raise SystemExit(f"{method} {path} {data}: {response.status_code}")
    return elapsed, len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--pending", type=int, default=50_000)
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-seed", action="store_true")
    args = parser.parse_args()
    if not args.no_seed:
        seed(rows=args.rows, pending=args.pending, games=args.games)
    setup_test_environment()  # the test client's host, as in the tests
    client = Client()
    client.force_login(moderator())
    ledger = ScoreEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    pending = ScoreEvent.objects.filter(status="pending_review")
    game_id = pending.values_list("game_id", flat=True).order_by("accepted_at").first()
    some = pending.order_by("accepted_at").first()
    assert some is not None, "nothing pending: seed first"
    pages_total = ScoreEvent.objects.filter(status="pending_review").count() // 50
    load_before = os.getloadavg()
    log(f"ledger: ~{ledger:,} rows, {pages_total * 50:,} pending; load {load_before[0]:.2f}")

    pages = {
        "open": (QUEUE, {}),
        "filter by game": (QUEUE, {"game": game_id}),
        "filter by reason": (QUEUE, {"reason": "anomaly"}),
        "search by player": (QUEUE, {"q": some.player_id}),
        "page 2": (QUEUE, {"p": 2}),
        f"page {max(pages_total - 1, 2)} (near the end)": (QUEUE, {"p": max(pages_total - 1, 2)}),
        "resolved list": (QUEUE, {"queue": "resolved"}),
        "item page (evidence)": (f"{QUEUE}{some.id}/change/", {}),
    }
    results: list[tuple[str, float, float, int]] = []
    for label, (path, data) in pages.items():
        timed(client, "GET", path, data)
        runs = [timed(client, "GET", path, data) for _ in range(args.repeat)]
        results.append((label, statistics.median(r[0] for r in runs), max(r[0] for r in runs), runs[0][1]))

    def bulk(action: str) -> None:
        ids = list(pending.order_by("accepted_at", "id").values_list("id", flat=True)[:100])
        form = {"action": action, "_selected_action": ids, "confirm": "yes", "reason": f"bench {action}"}
        ms, queries = timed(client, "POST", QUEUE, form, expect=302)
        assert ScoreEvent.objects.filter(id__in=ids, status="pending_review").count() == 0
        results.append((f"bulk {action} 100", ms, ms, queries))

    bulk("approve")
    bulk("revoke")
    item = pending.order_by("accepted_at", "id").first()
    assert item is not None
    ms, queries = timed(client, "POST", f"{QUEUE}{item.id}/decide/", {"decision": "revoke", "reason": "b"}, expect=302)
    results.append(("decide on the item page (revoke, to the next)", ms, ms, queries))
    load_after = os.getloadavg()

    print(f"review queue: ledger ~{ledger:,} rows, {pages_total * 50:,} pending, {os.cpu_count()} CPUs")
    for label, median, worst, queries in results:
        print(f"  {label:48s} {median:7.0f} ms (max {worst:.0f} ms, {queries} queries)")
    print(f"load average (1/5/15 min): before {load_before[0]:.2f}/{load_before[1]:.2f}/{load_before[2]:.2f}, ", end="")
    print(f"after {load_after[0]:.2f}/{load_after[1]:.2f}/{load_after[2]:.2f}")


if __name__ == "__main__":
    main()
