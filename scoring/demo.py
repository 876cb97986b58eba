"""The demo game: players with names and regions, and matches that look like play."""

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
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


# The order of the statuses in a summary; any other status follows, by name.
_STATUS_ORDER = ("accepted", "pending_review", "rejected")


@dataclass
class DemoTally:
    """What the demo stream sent since its last summary (`since`, a monotonic time), and in all:
    matches stored (202) with their results by status, and matches the service refused whole, by
    HTTP status."""

    since: float
    matches: int = 0
    results: Counter[str] = field(default_factory=Counter)
    refused: Counter[int] = field(default_factory=Counter)
    total: int = 0

    def answered(self, *, status: int, body: dict[str, Any]) -> None:
        """One match's answer: 202 (or 200, the same match again) with its results, or an error."""
        if status in (200, 202):
            self.matches += 1
            self.total += 1
            self.results.update(str(result.get("status", "?")) for result in body.get("results", ()))
        else:
            self.refused[status] += 1

    def due(self, *, now: float, every_s: float) -> bool:
        return now - self.since >= every_s

    def summary(self, *, now: float) -> str | None:
        """`demo: 20 matches, 80 results sent in the last 10 s (accepted 78, pending_review 2);
        total 1,234 matches`, then a new window from `now`. None when nothing was answered since."""
        if not self.matches and not self.refused:
            self.since = now
            return None
        order = sorted(self.results, key=lambda s: (_STATUS_ORDER.index(s) if s in _STATUS_ORDER else 99, s))
        statuses = ", ".join(f"{status} {self.results[status]:,}" for status in order)
        text = (
            f"demo: {self.matches:,} matches, {self.results.total():,} results sent in the last"
            f" {now - self.since:.0f} s ({statuses or 'none'}); total {self.total:,} matches"
        )
        if self.refused:
            codes = ", ".join(f"HTTP {code} x{n}" for code, n in sorted(self.refused.items()))
            text += f"; {self.refused.total():,} refused ({codes})"
        self.since, self.matches = now, 0
        self.results.clear()
        self.refused.clear()
        return text
