"""What the write path tells operators: each match's and each result's fate on /metrics, and one
log line per write request that stored or answered matches (the batch and single endpoints, the
single-result fast path). Reads log nothing.

- `leaderboard_matches_total{game, outcome, reason}`: per match, `stored` (202), `replayed`
  (200: the same match again) or `refused` with its error code (`invalid`, `season_closed`,
  `idempotency_conflict`).
- `leaderboard_results_total{game, outcome, reason}`: per player result of a stored match, as the
  judge decided: `accepted`, `quarantined` (pending review: `rate`, `matches_per_hour`,
  `points_per_minute`) or `refused` (stored as rejected: `banned`, `implausible`, `score_overflow`).

A request refused as a whole (bad signature 401, wrong game 403, over the key's rate 429, a
malformed body 400, the ledger down 503) stores nothing and has no matches to count: those show in
`leaderboard_http_request_duration_seconds_count` by route and status. Labels hold the game's slug
(of a verified key), fixed codes and reasons: never a player or match id.
"""

import logging
from collections import Counter as Tally
from collections.abc import Iterable, Mapping
from typing import Any

from common.observability import Counter

from .models import EventStatus

logger = logging.getLogger(__name__)

MATCHES = Counter(
    "leaderboard_matches_total",
    "Matches submitted, by what became of them: stored, replayed or refused (reason: the error code).",
    ["game", "outcome", "reason"],
)
RESULTS = Counter(
    "leaderboard_results_total",
    "Player results of stored matches, by the judge's verdict: accepted, quarantined or refused, with the reason.",
    ["game", "outcome", "reason"],
)
_OUTCOME = {
    EventStatus.ACCEPTED.value: "accepted",
    EventStatus.PENDING_REVIEW.value: "quarantined",
    EventStatus.REJECTED.value: "refused",
}


def write_report(*, game: str, answers: Iterable[tuple[int, Mapping[str, Any]]]) -> None:
    """Count the matches and results of one write request, and log it in one line. `answers`:
    each match's HTTP status and answer body, as the client gets them."""
    matches: Tally[tuple[str, str]] = Tally()
    results: Tally[tuple[str, str]] = Tally()
    for status, body in answers:
        if status == 202:
            matches["stored", ""] += 1
            for result in body.get("results", ()):
                results[_OUTCOME.get(result.get("status", ""), "refused"), result.get("reason", "")] += 1
        elif status == 200:
            matches["replayed", ""] += 1
        else:
            matches["refused", str(body.get("code", "invalid"))] += 1
    for (outcome, reason), n in matches.items():
        MATCHES.labels(game, outcome, reason).inc(n)
    for (outcome, reason), n in results.items():
        RESULTS.labels(game, outcome, reason).inc(n)
    by_outcome: Tally[str] = Tally()
    for (outcome, _), n in results.items():
        by_outcome[outcome] += n
    stored, replayed = matches["stored", ""], matches["replayed", ""]
    refused = sum(n for (outcome, _), n in matches.items() if outcome == "refused")
    logger.info(
        "write %s: %d matches (%d stored, %d replayed, %d refused); results %d accepted, %d quarantined, %d refused",
        game,
        stored + replayed + refused,
        stored,
        replayed,
        refused,
        by_outcome["accepted"],
        by_outcome["quarantined"],
        by_outcome["refused"],
        extra={
            "game": game,
            "matches_stored": stored,
            "matches_replayed": replayed,
            "matches_refused": refused,
            "results_accepted": by_outcome["accepted"],
            "results_quarantined": by_outcome["quarantined"],
            "results_refused": by_outcome["refused"],
        },
    )
