"""Shared bits of the benchmarks: signing, provisioning, payloads, percentiles (no Django)."""

import json
import math
import os
import random
import secrets
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the service's own signing helper (standard library only)
    sys.path.insert(0, str(ROOT))
REGIONS = ("eu", "na", "asia", "sa")

from common.signing import signed_headers as _signed_headers  # noqa: E402


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def signed_headers(key_id: str, secret: str, path: str, body: bytes) -> dict[str, str]:
    """A signed JSON POST's headers (common/signing.py, the service's own helper)."""
    headers = _signed_headers(key_id=key_id, secret=secret, method="POST", path=path, body=body)
    return {"Content-Type": "application/json", **headers}


def _manage(*args: str) -> dict:
    python = ROOT / ".venv" / "bin" / "python"
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    out = subprocess.run(
        [str(python), "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def provision(game: str | None, key_id: str | None, secret: str | None, label: str) -> tuple[str, str, str]:
    """The given game and key, or a fresh game `bench-<random>` with a new server key."""
    if game and key_id and secret:
        return game, key_id, secret
    if game or key_id or secret:
        raise SystemExit("give all of --game, --key-id and --secret, or none")
    slug = f"bench-{label}-{secrets.token_hex(4)}"
    created = _manage("create_game", slug, "--name", "Bench")
    key = _manage("create_server_key", created["game"])
    log(f"provisioned game {created['game']} (season {created['season']}), key {key['key_id']}")
    return created["game"], key["key_id"], key["secret"]


def player_id(n: int) -> str:
    return f"p{n:07d}"


def region_of(n: int) -> str:
    return REGIONS[n % len(REGIONS)]


def now_iso(ceil: bool = False) -> str:
    """Now in whole seconds; `ceil` rounds up, so a season created "now" (with microseconds) already
    contains it (a floored played_at can fall before the season's start: 409 season_closed)."""
    now = datetime.now(UTC)
    if ceil and now.microsecond:
        now = now.replace(microsecond=0) + timedelta(seconds=1)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def match(played_at: str, results: list[tuple[str, int, str]]) -> dict:
    return {
        "match_id": str(uuid.uuid4()),
        "played_at": played_at,
        "duration_s": 600,
        "results": [
            {"player_id": pid, "points": pts, "display_name": pid.upper(), "region": reg} for pid, pts, reg in results
        ],
    }


def random_pair(rng: random.Random, players: int) -> tuple[int, int]:
    a = rng.randrange(1, players + 1)
    b = rng.randrange(1, players + 1)
    while b == a:
        b = rng.randrange(1, players + 1)
    return a, b


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[k]


def redis_url(cli: str | None) -> str:
    return cli or os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
