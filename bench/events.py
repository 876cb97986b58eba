"""Events out: how fast events are published, numbered and delivered, each beside a raw figure
measured in the same run (docs/performance.md, "Events out").

    flock /tmp/bench.lock env DATABASE_URL=postgresql://postgres@127.0.0.1:5432/lb_events \\
        .venv/bin/python bench/events.py [--events 5000] [--webhooks 1]

1. publish: `--events` events (`player.banned`) published one per transaction, as a ban publishes
   its event, each taken by `--webhooks` webhooks (a delivery row each); beside it, the raw rate: a
   bare INSERT of the same columns into a table without indexes, one per transaction, on the same
   connection.
2. publish in bulk: as many again in transactions of 100 (a moderator's bulk revocation).
3. number: the backlog given feed ids, one `events_number` (what the first feed read or the
   dispatcher's round after a commit does).
4. deliver: `--events` new events (published in one transaction) POSTed to each webhook by the
   dispatcher (`manage.py dispatch_events`, a process of its own, the shipped settings) to a local
   receiver (an asyncio HTTP/1.1 server in a process of its own, answering 204); delivered/s from
   the commit to the last delivery recorded; beside it, the raw rate: a bare httpx POST loop to
   the same receiver, as many at once as the dispatcher may (WEBHOOK_CONCURRENCY per webhook).

Prints the CPU of the load generator (this process and the receiver) and the dispatcher's. Uses a
game of its own and deletes it with its events at the end.
"""

import argparse
import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")
os.environ.setdefault("LOG_LEVEL", "WARNING")


def receiver_main(port: int) -> None:
    """The receiver process: 204 to every request, keep-alive, no parsing beyond the length."""

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            return  # the client went, or the receiver stops (the finally closes its side)
        finally:
            writer.close()

    async def serve() -> None:
        server = await asyncio.start_server(client, "127.0.0.1", port, backlog=1024)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        async with server:
            await stop.wait()

    asyncio.run(serve())


if len(sys.argv) == 3 and sys.argv[1] == "--receiver":
    receiver_main(int(sys.argv[2]))
    sys.exit(0)

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
from _common import CpuMeter  # noqa: E402
from _ledger import bench_cleanup  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from common.testing import free_port  # noqa: E402
from events.models import Delivery, DeliveryAttempt, DeliveryStatus, Event, GameFeed, Webhook  # noqa: E402
from events.services import events_number, events_publish, events_publish_many, webhook_create  # noqa: E402
from seasons.models import Game  # noqa: E402
from seasons.services import game_create  # noqa: E402

DATA = {"player_id": "p0001234", "revoked": 3}


def proc_cpu_s(pid: int) -> float:
    """user + system CPU seconds of a running process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def publish_phase(game: Game, n: int) -> tuple[float, float]:
    """(events/s published one per transaction, raw INSERTs/s one per transaction)."""
    with connection.cursor() as cursor:  # a table like any other (a temporary one is not in the WAL)
        cursor.execute("CREATE TABLE bench_raw_events (game_id bigint, type text, data text, created_at timestamptz)")
    text = json.dumps(DATA)
    started = time.perf_counter()
    for _ in range(n):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO bench_raw_events VALUES (%s, %s, %s, %s)", [game.id, "player.banned", text, timezone.now()]
            )
    raw = n / (time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(n):
        with transaction.atomic():
            events_publish(game=game, type="player.banned", data=DATA)
    published = n / (time.perf_counter() - started)
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE bench_raw_events")
    return published, raw


def bulk_phase(game: Game, n: int) -> float:
    started = time.perf_counter()
    for start in range(0, n, 100):
        with transaction.atomic():
            events_publish_many(game=game, type="result.reviewed", items=[DATA] * min(100, n - start))
    return n / (time.perf_counter() - started)


def number_phase(game: Game) -> tuple[int, float]:
    started = time.perf_counter()
    numbered = events_number(game_id=game.id)
    return numbered, numbered / (time.perf_counter() - started)


def clear_deliveries(game: Game) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {DeliveryAttempt._meta.db_table} WHERE delivery_id IN "
            f"(SELECT id FROM {Delivery._meta.db_table} WHERE webhook_id IN "
            f"(SELECT id FROM {Webhook._meta.db_table} WHERE game_id = %s))",
            [game.id],
        )
        cursor.execute(
            f"DELETE FROM {Delivery._meta.db_table} WHERE webhook_id IN "
            f"(SELECT id FROM {Webhook._meta.db_table} WHERE game_id = %s)",
            [game.id],
        )


def wait_delivered(game: Game, expected: int, timeout: float) -> float:
    """Seconds until `expected` deliveries of the game's webhooks are delivered."""
    started = time.perf_counter()
    done = Delivery.objects.filter(webhook__game=game, status=DeliveryStatus.DELIVERED)
    while done.count() < expected:
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"only {done.count()} of {expected} delivered in {timeout} s")
        time.sleep(0.02)
    return time.perf_counter() - started


def deliver_phase(game: Game, hooks: list[Webhook], n: int) -> dict[str, float]:
    """Delivered/s by the dispatcher process, and its CPU."""
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    dispatcher = subprocess.Popen([sys.executable, "manage.py", "dispatch_events"], cwd=ROOT, env=env)
    try:
        with transaction.atomic():  # a warm-up event: the dispatcher is up once it is delivered
            events_publish(game=game, type="player.banned", data=DATA)
        wait_delivered(game, len(hooks), timeout=60)
        cpu_before = proc_cpu_s(dispatcher.pid)
        with transaction.atomic():
            events_publish_many(game=game, type="player.banned", items=[DATA] * n)
        took = wait_delivered(game, len(hooks) * (n + 1), timeout=600)
        cpu = proc_cpu_s(dispatcher.pid) - cpu_before
    finally:
        dispatcher.send_signal(signal.SIGTERM)
        dispatcher.wait(30)
    return {"delivered_per_s": len(hooks) * n / took, "seconds": took, "dispatcher_cpu_s": cpu}


def raw_post_phase(port: int, webhooks: int, n: int) -> float:
    """POSTs/s of a bare httpx loop to the receiver, WEBHOOK_CONCURRENCY at once per webhook."""
    lanes = int(settings.WEBHOOK_CONCURRENCY) * webhooks
    body = json.dumps({"id": 1, "type": "player.banned", "game": "bench", "created_at": "", "data": DATA}).encode()

    async def run() -> float:
        async with httpx.AsyncClient(trust_env=False) as client:

            async def lane(count: int) -> None:
                for _ in range(count):
                    await client.post(f"http://127.0.0.1:{port}/hook", content=body)

            started = time.perf_counter()
            await asyncio.gather(*(lane(n * webhooks // lanes) for _ in range(lanes)))
            return (n * webhooks // lanes) * lanes / (time.perf_counter() - started)

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--webhooks", type=int, default=1)
    args = parser.parse_args()
    slug = f"bench-events-{secrets.token_hex(4)}"
    game, _ = game_create(slug=slug, name="Bench events", season_start=timezone.now(), season_days=90)
    port = free_port()
    receiver = subprocess.Popen([sys.executable, __file__, "--receiver", str(port)])
    meter = CpuMeter()
    try:
        hooks = [
            webhook_create(game=game, url=f"http://127.0.0.1:{port}/hook/{i}?bench=1") for i in range(args.webhooks)
        ]
        with meter.phase("publish"):
            published, raw_insert = publish_phase(game, args.events)
        with meter.phase("bulk"):
            bulk = bulk_phase(game, args.events)
        with meter.phase("number"):
            numbered, number_rate = number_phase(game)
        clear_deliveries(game)  # the deliver phase starts from an empty queue
        with meter.phase("deliver"):
            delivered = deliver_phase(game, hooks, args.events)
        with meter.phase("raw post"):
            raw_post = raw_post_phase(port, args.webhooks, args.events)
    finally:
        receiver_cpu = proc_cpu_s(receiver.pid) if receiver.poll() is None else 0.0
        receiver.send_signal(signal.SIGTERM)
        receiver.wait(10)
        cleanup(game)
    totals = meter.totals()
    print(
        f"events: published {published:,.0f}/s one per transaction ({args.webhooks} webhook(s)), raw INSERT "
        f"{raw_insert:,.0f}/s, ratio {published / raw_insert:.2f}; in transactions of 100 {bulk:,.0f}/s; "
        f"numbered {number_rate:,.0f}/s ({numbered} at once)"
    )
    print(
        f"events: delivered {delivered['delivered_per_s']:,.0f}/s to a local receiver ({args.webhooks} webhook(s), "
        f"{args.events * args.webhooks} deliveries in {delivered['seconds']:.1f} s), raw httpx POST {raw_post:,.0f}/s, "
        f"ratio {delivered['delivered_per_s'] / raw_post:.2f}; dispatcher CPU {delivered['dispatcher_cpu_s']:.1f} s "
        f"({1000 * delivered['dispatcher_cpu_s'] / (args.events * args.webhooks):.2f} ms a delivery)"
    )
    print(
        f"events: load generator CPU {totals['self_cpu_s']:.1f} s (this process) + {receiver_cpu:.1f} s (receiver) "
        f"over {totals['wall_s']:.1f} s"
    )


def cleanup(game: Game) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {GameFeed._meta.db_table} WHERE game_id = %s", [game.id])
    clear_deliveries(game)
    Webhook.objects.filter(game=game).delete()
    Event.objects.filter(game=game).delete()
    bench_cleanup(game=game)


if __name__ == "__main__":
    main()
