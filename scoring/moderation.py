"""Moderation: the decisions that change a result's status (approve, revoke, reinstate, ban with
revocation, anomaly withholding). The ledger changes first, then the boards are corrected from it;
every decision is audited (anticheat's audit log).

Decisions are published as events (docs/api.md, "Events out") in their own transaction: a result approved
(from review, or reinstated) or revoked is a `result.reviewed`, a ban a `player.banned` (its
revocations publish no `result.reviewed`). The anomaly job's withholding and its automatic release
are no decision on a result and publish nothing: a client sees the result as it was answered."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import F, Max, Sum
from django.utils import timezone

from anticheat.services import ANOMALY_POLICY, AnomalyPolicy, anomalies_judge, audit, ban_record
from boards.keys import MarkedEvent
from boards.slots import EventSlots
from boards.writer import dedup_clear
from events.services import events_publish, events_publish_many
from events.types import PLAYER_BANNED, RESULT_REVIEWED
from seasons.models import Game
from seasons.selectors import seasons_of

from .corrections import player_correct_retrying
from .entries import tournament_results_approved, tournament_results_withdrawn
from .league_corrections import league_results_approved, league_results_withdrawn
from .ledger_partitions import played_floor
from .models import AnomalyScan, EventStatus, ScoreEvent, SeasonTotal
from .outbox import outbox_add, outbox_drop
from .players import DELETED_PREFIX

Actor = User | None  # the moderator who decided; None for a command or a job


@dataclass(frozen=True)
class BanResult:
    player_id: str
    revoked: int
    boards_changed: int


def player_ban(
    *,
    game: Game,
    player_id: str,
    reason: str = "",
    revoke_since: datetime | None = None,
    actor: Actor = None,
    actor_label: str = "",
) -> BanResult:
    """Ban a player: their new results are rejected. With `revoke_since`, their accepted and pending
    results played since then are revoked (kept in the ledger, status `revoked`), their season
    totals reduced, and every board they were on corrected from what remains. Publishes
    `player.banned` (with how many results this ban revoked) in the ban's transaction."""
    with transaction.atomic():
        ban_record(game=game, player_id=player_id, reason=reason)
        audit(action="ban", target=player_id, actor=actor, actor_label=actor_label, game=game, reason=reason)
        revoked = 0
        if revoke_since is not None:
            targets = ScoreEvent.objects.filter(
                game=game,
                player_id=player_id,
                played_at__gte=revoke_since,
                status__in=[EventStatus.ACCEPTED, EventStatus.PENDING_REVIEW],
            )
            locked = list(targets.select_for_update().values_list("id", flat=True))  # lock them first
            withdrawn = list(targets.filter(status=EventStatus.ACCEPTED).values_list("id", flat=True))
            lost = dict(
                targets.filter(status=EventStatus.ACCEPTED)
                .values("season_id")
                .annotate(points=Sum("points"))
                .values_list("season_id", "points")
            )
            revoked = targets.update(status=EventStatus.REVOKED, reason="banned")
            outbox_drop(locked)  # those not applied yet never will be
            for season_id, points in lost.items():
                SeasonTotal.objects.filter(season_id=season_id, player_id=player_id).update(points=F("points") - points)
        events_publish(game=game, type=PLAYER_BANNED, data={"player_id": player_id, "revoked": revoked})
    changed = player_correct_retrying(game=game, player_id=player_id) if revoked else 0
    if revoked:
        tournament_results_withdrawn(event_ids=withdrawn, now=timezone.now())
        league_results_withdrawn(event_ids=withdrawn, now=timezone.now())
    return BanResult(player_id=player_id, revoked=revoked, boards_changed=changed)


def _account(events: list[ScoreEvent], *, sign: int, action: str, reason: str, actor: Actor, actor_label: str) -> None:
    """Season totals follow a status change (+points into accepted, -points out of it); audited."""
    for event in events:
        if sign > 0:
            SeasonTotal.objects.get_or_create(season_id=event.season_id, player_id=event.player_id)
        if sign:
            SeasonTotal.objects.filter(season_id=event.season_id, player_id=event.player_id).update(
                points=F("points") + sign * event.points
            )
        audit(action=action, target=str(event.id), actor=actor, actor_label=actor_label, game=event.game, reason=reason)


@dataclass(frozen=True)
class ReviewResult:
    changed: int
    skipped: int


def _reviewed_publish(events: list[ScoreEvent], *, decision: str, reason: str) -> None:
    """One `result.reviewed` per result, in the caller's transaction (the events' games loaded)."""
    by_game: dict[int, list[ScoreEvent]] = {}
    for event in events:
        by_game.setdefault(event.game_id, []).append(event)
    for decided in by_game.values():
        items = [
            {"match_id": str(e.match_id), "player_id": e.player_id, "decision": decision, "reason": reason}
            for e in decided
        ]
        events_publish_many(game=decided[0].game, type=RESULT_REVIEWED, items=items)


def results_approve(
    *, event_ids: list[int], reason: str, actor: Actor = None, actor_label: str = "", announce: bool = True
) -> ReviewResult:
    """Approve pending results: they become `accepted` now (their reach time is the approval) and
    go down the normal apply path. Results no longer pending are skipped (e.g. revoked meanwhile).
    Locks the events (a concurrent revoke waits, then finds them accepted and revokes them).
    Their tournament entries count now if the contract lets them (`tournament_results_approved`);
    the counters they take are given back if the transaction fails. Publishes a `result.reviewed`
    (approved) for each, unless `announce` is off (the anomaly job's automatic release)."""
    now = timezone.now()
    give_back: list[Callable[[], None]] = []
    try:
        with transaction.atomic():
            events = list(
                ScoreEvent.objects.select_for_update()
                .filter(id__in=event_ids, status=EventStatus.PENDING_REVIEW)
                .select_related("game")
                .order_by("id")
            )
            # Their tournament entries decided again, as accepted results (before the status changes:
            # a counter filled from the ledger must not hold them yet).
            give_back.append(tournament_results_approved(events=events, now=now))
            give_back.append(league_results_approved(events=events, now=now))  # seated as first results
            _approve(events, now=now, reason=reason, actor=actor, actor_label=actor_label)
            if announce:
                _reviewed_publish(events, decision="approved", reason=reason)
    except BaseException:
        for undo in give_back:
            undo()
        raise
    return ReviewResult(changed=len(events), skipped=len(event_ids) - len(events))


def _approve(events: list[ScoreEvent], *, now: datetime, reason: str, actor: Actor, actor_label: str) -> None:
    """The approval's ledger changes (in its transaction) and the apply after its commit."""
    from .services import enqueue_apply

    _account(events, sign=+1, action="approve", reason=reason, actor=actor, actor_label=actor_label)
    ids = [e.id for e in events]
    ScoreEvent.objects.filter(id__in=ids).update(
        status=EventStatus.ACCEPTED,
        reason="",
        accepted_at=now,
        reviewed_at=now if actor is not None or actor_label else None,
    )
    outbox_add([(e.id, e.played_at) for e in events], accepted_at=now)  # the relay finds them should the enqueue fail
    if ids:
        transaction.on_commit(lambda: enqueue_apply(ids), robust=True)


def results_revoke(*, event_ids: list[int], reason: str, actor: Actor = None, actor_label: str = "") -> ReviewResult:
    """Revoke results (accepted or pending): marked `revoked` in the ledger, never deleted; each
    affected player's boards are then re-derived from what remains and written as absolute values.
    A moderator's (or a named command's) revocation stamps `reviewed_at` (the queue's resolved list).
    Revoking pending results corrects no board (they were never on one): a queue cleared in bulk
    costs one transaction. Publishes a `result.reviewed` (revoked) for each, in its transaction.
    Locks the events; the correction locks each player."""
    with transaction.atomic():
        events = list(
            ScoreEvent.objects.select_for_update()
            .filter(id__in=event_ids, status__in=[EventStatus.ACCEPTED, EventStatus.PENDING_REVIEW])
            .select_related("game")
            .order_by("id")
        )
        counted = [e for e in events if e.status == EventStatus.ACCEPTED]
        _account(counted, sign=-1, action="revoke", reason=reason, actor=actor, actor_label=actor_label)
        others = [e for e in events if e.status != EventStatus.ACCEPTED]
        _account(others, sign=0, action="revoke", reason=reason, actor=actor, actor_label=actor_label)
        decided = {"reviewed_at": timezone.now()} if actor is not None or actor_label else {}
        ScoreEvent.objects.filter(id__in=[e.id for e in events]).update(
            status=EventStatus.REVOKED, reason="revoked", **decided
        )
        outbox_drop([e.id for e in counted])  # an accepted result not applied yet never will be
        _reviewed_publish(events, decision="revoked", reason=reason)
    # Only players who lose an accepted result need their boards corrected: a pending result was
    # never on them (the anomaly job's withholding corrects the boards itself, after its commit).
    _correct_players(counted)
    tournament_results_withdrawn(event_ids=[e.id for e in counted], now=timezone.now())
    league_results_withdrawn(event_ids=[e.id for e in counted], now=timezone.now())
    return ReviewResult(changed=len(events), skipped=len(event_ids) - len(events))


def _correct_players(events: list[ScoreEvent]) -> None:
    """Correct the boards of every player these events belong to, in a fixed order."""
    for game_id, player_id in sorted({(e.game_id, e.player_id) for e in events}):
        game = next(e.game for e in events if e.game_id == game_id)
        player_correct_retrying(game=game, player_id=player_id)


def _withhold(events: list[ScoreEvent], reason: str) -> None:
    """Accepted results back to review (the boards corrected from what remains)."""
    with transaction.atomic():
        locked = list(
            ScoreEvent.objects.select_for_update()
            .filter(id__in=[e.id for e in events], status=EventStatus.ACCEPTED)
            .select_related("game")
        )
        _account(locked, sign=-1, action="withhold", reason=reason, actor=None, actor_label="anomaly job")
        ScoreEvent.objects.filter(id__in=[e.id for e in locked]).update(
            status=EventStatus.PENDING_REVIEW, reason="anomaly"
        )
        outbox_drop([e.id for e in locked])  # an approval puts them back
    # Their dedup markers go: once approved, they must be applied again (a queued copy of the old
    # apply finds them pending in the ledger and skips them).
    slots = EventSlots()
    dedup_clear(
        events=[
            MarkedEvent(e.id, e.accepted_at, slots.of(season_id=e.season_id, player_id=e.player_id)) for e in locked
        ]
    )
    _correct_players(locked)
    tournament_results_withdrawn(event_ids=[e.id for e in locked], now=timezone.now())
    league_results_withdrawn(event_ids=[e.id for e in locked], now=timezone.now())


ANOMALY_RECOMPUTE_S = 600


def anomalies_review(*, game: Game, now: datetime, policy: AnomalyPolicy = ANOMALY_POLICY) -> tuple[int, int]:
    """The anomaly job: results whose points the policy (anticheat's `anomalies_judge`) finds
    above the cohort's quantile over its window go to review (withheld from the boards, taken off
    them exactly if already applied); results it held earlier that the cohort has since caught up
    with are released automatically. Results a moderator approved are never flagged again.
    Returns (withheld, released).

    The limit over the whole window (a count and a percentile of every result in it) is computed
    at most every ANOMALY_RECOMPUTE_S while the cohort is large enough to judge (a 7-day cohort of
    a million results barely moves in a minute, and the full pass costs about 1.5 s of PostgreSQL);
    the runs in between check only the results that arrived since, by id, against that limit.
    """
    policy_label = f"{policy.quantile}/{policy.min_cohort}/{policy.window_days}"
    scan = AnomalyScan.objects.filter(game=game).first()
    newest = _newest_event_id(game=game, now=now, policy=policy)
    due = (
        scan is None
        or scan.limit is None
        or scan.policy != policy_label
        or (now - scan.computed_at).total_seconds() >= ANOMALY_RECOMPUTE_S
    )
    if due:
        limit = _anomaly_limit(game=game, now=now, policy=policy)
        suspects = _anomaly_suspects(game=game, since=now - timedelta(days=policy.window_days), limit=limit)
    else:
        assert scan is not None and scan.limit is not None
        limit = scan.limit
        # From the ids the last run saw onwards: a transaction that took its ids before that run
        # may have committed after it.
        suspects = _anomaly_suspects(
            game=game, since=now - timedelta(days=policy.window_days), limit=limit, after_id=scan.checked_from_id
        )
    AnomalyScan.objects.update_or_create(
        game=game,
        defaults={
            "limit": limit,
            "policy": policy_label,
            "computed_at": now if due else scan.computed_at,  # type: ignore[union-attr]
            "checked_from_id": scan.checked_to_id if scan is not None else newest,
            "checked_to_id": newest,
        },
    )
    if limit is None:
        return 0, 0
    if suspects:
        _withhold(suspects, reason=f"points above the {policy.window_days}-day p{policy.quantile * 100:g} ({limit})")
    cleared: list[int] = []
    if due:  # only a new limit can release what an earlier one held
        cleared = list(
            ScoreEvent.objects.filter(
                game=game, status=EventStatus.PENDING_REVIEW, reason="anomaly", points__lte=limit
            ).values_list("id", flat=True)
        )
    if cleared:
        results_approve(
            event_ids=cleared, reason=f"re-check: within the {policy.window_days}-day cohort ({limit})", announce=False
        )
    return len(suspects), len(cleared)


def _newest_event_id(*, game: Game, now: datetime, policy: AnomalyPolicy) -> int:
    """The ledger's newest event id, from the months a result accepted in the window can be in:
    from the earliest season still open then to the furthest a played_at may be ahead of the clock."""
    played = (
        played_floor(seasons_of(game=game), accepted_since=now - timedelta(days=policy.window_days)),
        now + timedelta(seconds=settings.PLAYED_AT_MAX_FUTURE_S),
    )
    return int(ScoreEvent.objects.filter(played_at__range=played).aggregate(newest=Max("id"))["newest"] or 0)


def _anomaly_limit(*, game: Game, now: datetime, policy: AnomalyPolicy) -> int | None:
    """The policy's limit over the whole window; None while the cohort is too small to judge.

    One scan gives the cohort's size and its quantile, on one core (no parallel workers, no JIT):
    the pass runs beside the web processes, which it should not take both cores from. Measured on
    a 100,000-result window: 42-57 ms for a count and then a percentile, 24-36 ms for this.
    """
    since = now - timedelta(days=policy.window_days)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        cursor.execute("SET LOCAL jit = off")
        cursor.execute(
            f"SELECT count(*), percentile_disc(%s) WITHIN GROUP (ORDER BY points) FROM {ScoreEvent._meta.db_table} "
            "WHERE game_id = %s AND accepted_at >= %s AND played_at >= %s AND played_at <= %s AND status IN (%s, %s)",
            [
                policy.quantile,
                game.id,
                since,
                played_floor(seasons_of(game=game), accepted_since=since),
                now + timedelta(seconds=settings.PLAYED_AT_MAX_FUTURE_S),
                EventStatus.ACCEPTED.value,
                EventStatus.PENDING_REVIEW.value,
            ],
        )
        size, quantile_points = cursor.fetchone()
    threshold = int(quantile_points) if size >= policy.min_cohort else None
    return anomalies_judge(policy=policy, cohort_size=size, quantile_points=threshold)


def _anomaly_suspects(*, game: Game, since: datetime, limit: int | None, after_id: int = 0) -> list[ScoreEvent]:
    """Accepted results of the window above the limit, never cleared by a moderator."""
    if limit is None:
        return []
    # The months that can hold them.
    floor = played_floor(seasons_of(game=game), accepted_since=since)
    ceiling = timezone.now() + timedelta(seconds=settings.PLAYED_AT_MAX_FUTURE_S)
    found = ScoreEvent.objects.filter(
        game=game,
        accepted_at__gte=since,
        played_at__range=(floor, ceiling),
        status=EventStatus.ACCEPTED,
        points__gt=limit,
        reviewed_at__isnull=True,
    )
    if after_id:
        # The new events by the primary key's range (a materialized CTE, so the planner cannot
        # choose to walk every row of the game instead, as it does when its statistics of a new
        # game are stale), then the conditions.
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH recent AS MATERIALIZED (SELECT id, game_id, accepted_at, status, points, reviewed_at "
                f"FROM {ScoreEvent._meta.db_table} WHERE id > %s AND played_at >= %s AND played_at <= %s) "
                "SELECT id FROM recent WHERE game_id = %s AND accepted_at >= %s AND status = %s AND points > %s "
                "AND reviewed_at IS NULL",
                [after_id, floor, ceiling, game.id, since, EventStatus.ACCEPTED.value, limit],
            )
            ids = [row[0] for row in cursor.fetchall()]
        if not ids:
            return []
        found = found.filter(id__in=ids)
    return list(found.select_related("game"))


def results_reinstate(*, event_ids: list[int], reason: str, actor: Actor = None, actor_label: str = "") -> ReviewResult:
    """Undo a revocation (a disqualification is reversible): revoked results become accepted again
    and go down the normal apply path. Their old dedup markers are dropped first, so the apply
    counts them (the correction that revoked them took them off the boards).

    The markers go before the transaction, not inside it (no Redis call holds the row locks): a
    revoked result is never applied, so a marker dropped for one that stays revoked (a failed
    transaction, or a concurrent revoke) changes nothing."""
    from .services import enqueue_apply

    found = list(
        ScoreEvent.objects.filter(id__in=event_ids, status=EventStatus.REVOKED)
        .exclude(player_id__startswith=DELETED_PREFIX)
        .values_list("id", "accepted_at", "season_id", "player_id")
    )
    candidates = [event_id for event_id, *_ in found]
    slots = EventSlots()
    dedup_clear(
        events=[
            MarkedEvent(event_id, at, slots.of(season_id=season_id, player_id=player))
            for event_id, at, season_id, player in found
        ]
    )
    now = timezone.now()
    with transaction.atomic():
        events = list(
            ScoreEvent.objects.select_for_update()
            .filter(id__in=candidates, status=EventStatus.REVOKED)
            .select_related("game")
        )
        _account(events, sign=+1, action="reinstate", reason=reason, actor=actor, actor_label=actor_label)
        ids = [e.id for e in events]
        ScoreEvent.objects.filter(id__in=ids).update(
            status=EventStatus.ACCEPTED, reason="", accepted_at=now, reviewed_at=now
        )
        outbox_add([(e.id, e.played_at) for e in events], accepted_at=now)
        _reviewed_publish(events, decision="approved", reason=reason)
        if ids:
            transaction.on_commit(lambda: enqueue_apply(ids), robust=True)
    return ReviewResult(changed=len(events), skipped=len(event_ids) - len(events))
