#!/usr/bin/env python3
"""Django's own floor: the web process's CPU per request for what every request through Django pays.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/lb_django_floor \\
        .venv/bin/python bench/django_floor.py [--seconds 8] [--connections 8] [--profile var/bench/profiles]

It starts one web process of its own (leaderboard_site/serve.py, as `make run` starts each) on a
free port against DATABASE_URL (migrated first) and REDIS_URL, signs a moderator in (a session made
directly, no password round trip), then for each route, in a closed loop from --connections
keep-alive connections for --seconds:
  - `/health/live`: a view that does nothing, so its cost is Django's per-request machinery
    (middleware, the handler, the thread hop of a synchronous view);
  - `/`: the public list of games (a template and a query, through Django);
  - `/admin/seasons/game/`: an admin change list (sessions, authentication, messages, CSRF, the
    template engine and a few queries), with a few games in it;
  - beside them, the fast entrance's `/api/v1/games/{game}` (no Django), for scale.
It prints requests/s and the web process's CPU per request (user + system, from /proc), and the load
generator's own CPU. With --profile it records each route with py-spy (speedscope JSON) for as
long as the loop runs.
"""

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django

django.setup()

from importlib import import_module  # noqa: E402

from _common import Conn, CpuMeter, log  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model  # noqa: E402
from django.contrib.auth.models import Group  # noqa: E402
from django.core.management import call_command  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def process_cpu_s(pid: int) -> float:
    """User + system CPU of a process (all its threads), from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def moderator_cookie() -> str:
    """A signed-in session of a superuser `bench-moderator`, as the admin's sign-in leaves it."""
    user_model = get_user_model()
    user, _ = user_model.objects.get_or_create(username="bench-moderator", defaults={"is_staff": True})
    user.is_staff = user.is_superuser = True
    user.set_password("unused-" + os.urandom(8).hex())
    user.save()
    moderators = Group.objects.filter(name="moderators").first()
    if moderators is not None:
        user.groups.add(moderators)
    store = import_module(settings.SESSION_ENGINE).SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return f"{settings.SESSION_COOKIE_NAME}={store.session_key}"


def games_present(count: int = 5) -> str:
    """A few games (the change list's rows); the slug of one."""
    from seasons.models import Game

    slugs = []
    for i in range(count):
        slug = f"floor-game-{i}"
        if not Game.objects.filter(slug=slug).exists():
            call_command("create_game", slug, "--name", f"Floor game {i}", stdout=open(os.devnull, "w"))
        slugs.append(slug)
    return slugs[0]


async def closed_loop(
    port: int, path: str, headers: dict[str, str], connections: int, seconds: float
) -> tuple[int, int]:
    """(answers, of which not 200) in a closed loop."""
    done = bad = 0
    stop = time.perf_counter() + seconds

    async def one() -> None:
        nonlocal done, bad
        conn = Conn("127.0.0.1", port)
        while time.perf_counter() < stop:
            status, _ = await conn.request("GET", path, None, headers)
            done += 1
            bad += status != 200
        conn.close()

    await asyncio.gather(*(one() for _ in range(connections)))
    return done, bad


def measure(args, port: int, pid: int, name: str, path: str, headers: dict[str, str], meter: CpuMeter) -> dict:
    asyncio.run(closed_loop(port, path, headers, args.connections, 1.0))  # warm-up
    spy = None
    if args.profile:
        out = Path(args.profile) / f"django_floor_{name}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        spy = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "-p",
                str(pid),
                "-f",
                "speedscope",
                "-o",
                str(out),
                "-d",
                str(int(args.seconds)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)
    cpu0, t0 = process_cpu_s(pid), time.perf_counter()
    with meter.phase(name):
        done, bad = asyncio.run(closed_loop(port, path, headers, args.connections, args.seconds))
    cpu, wall = process_cpu_s(pid) - cpu0, time.perf_counter() - t0
    if spy is not None:
        spy.wait()
    figures = {"path": path, "rps": done / wall, "cpu_ms_per_request": 1000 * cpu / max(done, 1), "not_200": bad}
    log(
        f"{name:>12}: {figures['rps']:7.0f} req/s, web process CPU {figures['cpu_ms_per_request']:.3f} ms per request"
        f" ({bad} not 200)"
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--profile", help="a directory: record each route with py-spy into it")
    args = parser.parse_args()
    call_command("migrate", "--noinput", verbosity=0)
    game = games_present()
    cookie = moderator_cookie()
    port = free_port()
    env = {**os.environ, "READ_RATE_PER_S": "1000000", "READ_RATE_BURST": "1000000"}
    web = subprocess.Popen(
        [sys.executable, "-m", "leaderboard_site.serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(150):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        meter = CpuMeter()
        routes = [
            ("health_live", "/health/live", {}),
            ("home", "/", {}),
            ("admin_list", "/admin/seasons/game/", {"Cookie": cookie}),
            ("fast_game", f"/api/v1/games/{game}", {}),
        ]
        for name, path, headers in routes:
            measure(args, port, web.pid, name, path, headers, meter)
        totals = meter.totals()
        share = totals["share_of_one_core"]
        log(f"load generator: {totals['cpu_s']:.1f} s CPU in {totals['wall_s']:.0f} s ({share:.0%} of one core)")
    finally:
        web.terminate()
        web.wait(timeout=30)


if __name__ == "__main__":
    main()
