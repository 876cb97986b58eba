"""The demo game: players with names and regions, and matches that look like play."""

import random
import uuid
from datetime import datetime, timedelta
from typing import Any

FIRST = ["Maya", "Leo", "Ava", "Noah", "Zoe", "Kai", "Iris", "Omar", "Lena", "Ravi", "Yuki", "Sofia", "Finn", "Nia"]
LAST = ["Storm", "Pixel", "Nova", "Blaze", "Frost", "Echo", "Viper", "Quill", "Rune", "Drift"]
REGIONS = ["eu", "na", "apac", "sa"]


def demo_players(count: int, seed: int = 7) -> list[dict[str, str]]:
    rng = random.Random(seed)
    players = []
    for i in range(count):
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        players.append({"player_id": f"p{i:04d}", "display_name": name, "region": rng.choice(REGIONS)})
    return players


def demo_match(rng: random.Random, players: list[dict[str, str]], played_at: datetime) -> dict[str, Any]:
    """A 2-6 player match; skill is the player's index, so the board has a stable shape."""
    size = rng.randint(2, 6)
    chosen = rng.sample(players, size)
    results = []
    for p in chosen:
        skill = 1 + (len(players) - int(p["player_id"][1:])) / len(players)
        results.append({**p, "points": int(rng.randint(0, 60) * skill)})
    return {
        "match_id": str(uuid.uuid4()),
        "played_at": played_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "duration_s": rng.randint(300, 1200),
        "results": results,
    }


def demo_history(players: list[dict[str, str]], now: datetime, matches: int, days: int, seed: int = 11):
    rng = random.Random(seed)
    for _ in range(matches):
        played_at = now - timedelta(seconds=rng.randint(60, days * 86400))
        yield demo_match(rng, players, played_at)
