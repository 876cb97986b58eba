"""The review queue's reads (selectors): what a moderator sees before deciding.

Everything here stays on the few rows that need review, never on the ledger as a whole: pending
results through the partial index `event_pending_review` (game, accepted_at) WHERE pending, the
decided ones through `event_reviewed` (reviewed_at) WHERE reviewed_at IS NOT NULL, one player's
results through (season, player_id), one match's through the unique (game, match_id, player_id),
and the decisions through the audit log's index on its target. The decisions themselves are
moderation's (results_approve, results_revoke).
"""

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Count, Q, QuerySet
from django.utils.functional import cached_property

from anticheat.models import AuditEntry, Ban
from anticheat.services import ANOMALY_POLICY, Rules, rules_for
from common.operations import digits_only
from seasons.models import Game, Season

from .models import AnomalyScan, EventStatus, ScoreEvent

PENDING = "pending"
RESOLVED = "resolved"
QUEUES = {PENDING: "Pending (oldest first)", RESOLVED: "Resolved (latest decision first)"}
DECISIONS = ("approve", "revoke", "reinstate", "withhold")
COUNT_CAP = 100_000  # the pager counts at most this many rows (a number beyond it says "more")
RECENT = 20

# Why each reason held a result, in a moderator's words.
REASONS = {
    "rate": "a burst beyond the player's token bucket",
    "matches_per_hour": "more matches in an hour than the game allows",
    "points_per_minute": "more points per minute of play than the game allows",
    "anomaly": "points above the cohort's quantile (the anomaly job)",
}


def review_condition(*, queue: str) -> Q:
    """The rows of a queue, in the terms of its partial index (so no plan can walk the ledger)."""
    if queue == RESOLVED:
        return Q(reviewed_at__isnull=False)
    return Q(status=EventStatus.PENDING_REVIEW)


def review_ordering(*, queue: str) -> tuple[str, ...]:
    return ("-reviewed_at", "-id") if queue == RESOLVED else ("accepted_at", "id")


class CappedPaginator(Paginator):
    """A pager whose count is known already (`known_count`), or stops at COUNT_CAP:
    `SELECT COUNT(*) FROM (... LIMIT cap)` over the queue's own rows (the admin always asks for a
    count, even with show_full_result_count off)."""

    def __init__(self, *args: Any, known_count: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.known_count = known_count

    @cached_property
    def count(self) -> int:
        if self.known_count is not None:
            return self.known_count
        rows = self.object_list
        if isinstance(rows, QuerySet):
            return int(rows.order_by()[:COUNT_CAP].count())
        return len(rows)


PendingCounts = dict[tuple[int, str], int]


def review_pending_counts() -> PendingCounts:
    """Pending items per (game id, reason): one grouped read of the pending rows (through the
    partial index), from which the filters list their options and the pager its count."""
    rows = (
        ScoreEvent.objects.filter(status=EventStatus.PENDING_REVIEW)
        .order_by()
        .values("game_id", "reason")
        .annotate(n=Count("id"))
        .values_list("game_id", "reason", "n")
    )
    return {(int(game_id), str(reason)): int(n) for game_id, reason, n in rows}


def review_pending_count(*, counts: PendingCounts, game_id: int | None = None, reason: str | None = None) -> int:
    return sum(
        n for (g, r), n in counts.items() if (game_id is None or g == game_id) and (reason is None or r == reason)
    )


def review_pending_games(*, counts: PendingCounts) -> list[tuple[int, str, int]]:
    """(game id, slug, pending items) of the games with anything pending, most pending first."""
    per_game: dict[int, int] = {}
    for (game_id, _), n in counts.items():
        per_game[game_id] = per_game.get(game_id, 0) + n
    slugs = dict(Game.objects.filter(id__in=per_game).values_list("id", "slug"))
    return sorted(((g, slugs.get(g, str(g)), n) for g, n in per_game.items()), key=lambda row: (-row[2], row[1]))


def review_pending_reasons(*, counts: PendingCounts) -> list[tuple[str, int]]:
    """(reason, pending items), most first."""
    per_reason: dict[str, int] = {}
    for (_, reason), n in counts.items():
        per_reason[reason] = per_reason.get(reason, 0) + n
    return sorted(per_reason.items(), key=lambda row: -row[1])


def review_search(*, queryset: QuerySet[Any], term: str) -> QuerySet[Any]:
    """The queue's rows matching a search: `#123` an event id, a UUID a match id, anything else an
    exact player id (through (season, player_id) for each season: a player's few rows, not every
    pending row)."""
    term = term.strip()
    if term.startswith("#") and digits_only(term[1:]):
        return queryset.filter(id=int(term[1:]))
    try:
        return queryset.filter(match_id=uuid.UUID(term))
    except ValueError:
        return queryset.filter(player_id=term, season_id__in=Season.objects.values("id"))


def review_decisions(*, event_ids: Iterable[int]) -> dict[int, AuditEntry]:
    """The latest moderation entry of each event (who, when, why), from the audit log by target."""
    targets = [str(i) for i in event_ids]
    latest: dict[int, AuditEntry] = {}
    if not targets:
        return latest
    for entry in AuditEntry.objects.filter(target__in=targets, action__in=DECISIONS).order_by("created_at", "id"):
        latest[int(entry.target)] = entry
    return latest


def review_hold_summaries(*, events: list[ScoreEvent]) -> dict[int, str]:
    """One line per listed event: the number it was held for against its limit (e.g. "2.1 x the
    p99.99 (20,000)", "1,000 points/min, limit 100"), from the page's games' rules and anomaly
    limits (a query per game on the page, none over the ledger)."""
    game_ids = {e.game_id for e in events}
    limits = dict(AnomalyScan.objects.filter(game_id__in=game_ids).values_list("game_id", "limit"))
    games = {g.id: g for g in Game.objects.filter(id__in=game_ids)}
    rules = {g: rules_for(game=game) for g, game in games.items()}
    quantile = f"p{ANOMALY_POLICY.quantile * 100:g}"
    lines: dict[int, str] = {}
    for e in events:
        limit, rule = limits.get(e.game_id), rules.get(e.game_id)
        if e.reason == "points_per_minute" and rule is not None:
            per_minute = e.points * 60 / max(e.duration_s, 1)
            lines[e.id] = f"{per_minute:,.0f} points/min, limit {rule.max_points_per_minute:,}"
        elif limit:
            lines[e.id] = f"{e.points / limit:.1f} x the {quantile} ({limit:,})"
        else:
            lines[e.id] = f"{e.duration_s} s match"
    return lines


def review_next_pending(*, after: ScoreEvent, game_id: int | None = None, reason: str | None = None) -> int | None:
    """The pending item after `after` in queue order (oldest first), wrapping round to the start;
    within a game and a reason when the moderator filtered by them. None: the queue is empty."""
    pending = ScoreEvent.objects.filter(status=EventStatus.PENDING_REVIEW).exclude(id=after.id)
    if game_id is not None:
        pending = pending.filter(game_id=game_id)
    if reason:
        pending = pending.filter(reason=reason)
    later = pending.filter(
        Q(accepted_at__gt=after.accepted_at) | Q(accepted_at=after.accepted_at, id__gt=after.id)
    ).order_by("accepted_at", "id")
    found = later.values_list("id", flat=True).first()
    if found is None:
        found = pending.order_by("accepted_at", "id").values_list("id", flat=True).first()
    return found


@dataclass(frozen=True)
class Figure:
    """One number behind a hold: what it is, its value, the limit it is held against."""

    label: str
    value: str
    limit: str = ""
    over: bool = False


@dataclass(frozen=True)
class ReviewEvidence:
    event: ScoreEvent
    why: str
    figures: list[Figure]
    same_match: list[ScoreEvent]
    recent: list[ScoreEvent]
    statuses: dict[str, int]
    bans: list[Ban]
    decisions: list[AuditEntry]
    history: list[AuditEntry]
    withheld_because: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _player_results(event: ScoreEvent) -> QuerySet[ScoreEvent]:
    """The player's results in the event's game, through (season, player_id) for each season."""
    season_ids = list(Season.objects.filter(game_id=event.game_id).values_list("id", flat=True))
    return ScoreEvent.objects.filter(
        season_id__in=season_ids or [event.season_id], game_id=event.game_id, player_id=event.player_id
    )


def _rate_figures(event: ScoreEvent, rules: Rules) -> list[Figure]:
    mine = _player_results(event)
    at = event.accepted_at
    windows = {"minute": 60, "10 minutes": 600, "hour": 3600, "day": 86400}
    found = mine.filter(accepted_at__gt=at - timedelta(days=1), accepted_at__lte=at).aggregate(
        **{
            name: Count("id", filter=Q(accepted_at__gt=at - timedelta(seconds=s)))
            for name, s in (("n_" + k.replace(" ", "_"), v) for k, v in windows.items())
        },
        matches_hour=Count("match_id", distinct=True, filter=Q(accepted_at__gt=at - timedelta(hours=1))),
    )
    figures = []
    bucket_hour = ""
    if rules.player_burst and rules.player_refill_s:
        bucket_hour = f"burst {rules.player_burst}, then 1 per {rules.player_refill_s} s"
    figures.append(
        Figure(
            "the player's results in the minute before",
            str(found["n_minute"]),
            f"burst {rules.player_burst}" if rules.player_burst else "",
            bool(rules.player_burst and found["n_minute"] > rules.player_burst),
        )
    )
    figures.append(Figure("… in the 10 minutes before", str(found["n_10_minutes"]), bucket_hour))
    figures.append(
        Figure(
            "… in the hour before (matches submitted)",
            f"{found['n_hour']} ({found['matches_hour']})",
            f"{rules.max_matches_per_hour} matches/h" if rules.max_matches_per_hour else "",
            bool(rules.max_matches_per_hour and found["matches_hour"] > rules.max_matches_per_hour),
        )
    )
    figures.append(Figure("… in the day before", str(found["n_day"])))
    return figures


def review_evidence(*, event: ScoreEvent) -> ReviewEvidence:
    """Everything a moderator needs to decide on one result, on one page: why it was held, with
    the numbers against their limits (points against the rule or the cohort's quantile, points per
    minute, the player's rate, the match's duration), the other results of the match, the player's
    last RECENT results and their statuses, bans, and the decisions taken on them before."""
    game = event.game
    rules = rules_for(game=game)
    scan = AnomalyScan.objects.filter(game=game).first()
    figures = _points_figures(event, rules, scan) + _rate_figures(event, rules)
    same_match = list(
        ScoreEvent.objects.filter(game_id=event.game_id, match_id=event.match_id).order_by("-points", "player_id")
    )
    recent = list(_player_results(event).order_by("-accepted_at", "-id")[:RECENT])
    last_ids = list(_player_results(event).order_by("-accepted_at", "-id").values_list("id", "status")[:200])
    statuses: dict[str, int] = {}
    for _, status in last_ids:
        statuses[status] = statuses.get(status, 0) + 1
    bans = list(Ban.objects.filter(game=game, player_id=event.player_id).order_by("-created_at"))
    targets = [str(i) for i, _ in last_ids if i != event.id] + [event.player_id]
    decisions = list(AuditEntry.objects.filter(target__in=targets).order_by("-created_at", "-id")[:RECENT])
    history = list(AuditEntry.objects.filter(target=str(event.id)).order_by("created_at", "id"))
    withheld = next((e.reason for e in reversed(history) if e.action == "withhold"), "")
    return ReviewEvidence(
        event=event,
        why=REASONS.get(event.reason, event.reason or "-"),
        figures=figures,
        same_match=same_match,
        recent=recent,
        statuses=statuses,
        bans=bans,
        decisions=decisions,
        history=history,
        withheld_because=withheld,
        extra={"checked_at": scan.computed_at if scan is not None else None},
    )


def _points_figures(event: ScoreEvent, rules: Rules, scan: AnomalyScan | None) -> list[Figure]:
    """The result's own numbers against their limits: points against the cohort's quantile (the
    last anomaly scan's) and the game's maximum, points per minute of play, the match's duration."""
    game = event.game
    limit = scan.limit if scan is not None else None
    per_minute = event.points * 60 / max(event.duration_s, 1)
    quantile = f"p{ANOMALY_POLICY.quantile * 100:g}"
    figures = [
        Figure(
            "points",
            f"{event.points:,}",
            f"{limit:,} ({quantile} of the last {ANOMALY_POLICY.window_days} days)" if limit is not None else "",
            limit is not None and event.points > limit,
        ),
    ]
    if limit:
        figures.append(Figure(f"points / cohort {quantile}", f"{event.points / limit:.2f} x", "1.00 x"))
    if game.max_points_per_match:
        figures.append(
            Figure("points / the game's maximum per match", f"{event.points / game.max_points_per_match:.2%}")
        )
    figures.append(
        Figure(
            "points per minute of play",
            f"{per_minute:,.0f}",
            f"{rules.max_points_per_minute:,}" if rules.max_points_per_minute else "",
            bool(rules.max_points_per_minute and per_minute > rules.max_points_per_minute),
        )
    )
    figures.append(
        Figure(
            "match duration",
            f"{event.duration_s} s",
            f"at least {rules.min_duration_s} s" if rules.min_duration_s else "",
            bool(rules.min_duration_s and event.duration_s < rules.min_duration_s),
        )
    )
    return figures
