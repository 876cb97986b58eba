"""The ledger's monthly partitions (scoring/ledger_partitions.py): created ahead and on demand,
idempotency within a month's claims, and the jobs that read the ledger reading only the months they
need, checked on the plans PostgreSQL runs (EXPLAIN ANALYZE of the statements each job sends)."""

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from competitions.testing import make_league
from scoring.league_closing import league_period_close
from scoring.ledger_partitions import (
    CLAIMS,
    EVENTS,
    month_of,
    months_ahead,
    months_spanned,
    partition_name,
    partitions_ahead,
    partitions_list,
)
from scoring.models import EventStatus, MatchSubmission, ScoreEvent
from scoring.moderation import anomalies_review, results_revoke
from scoring.outbox import _unapplied_rows, events_apply_by_id
from scoring.rebuild import boards_rebuild
from scoring.reconcile import boards_reconcile
from scoring.recovery import boards_recover_if_lost
from scoring.review import review_pending_counts
from scoring.testing import drain, make_game, make_key, match_body, outbox_restore, submit_direct

pytestmark = pytest.mark.django_db(transaction=True)

NOW = timezone.now()
START = NOW - timedelta(days=200)  # the game's season: the last 200 days and the next 100


def seeded(months: int = 6):
    """A game whose season spans many months, with a result played in each of the last `months`
    months (so every one of them has partitions with rows the planner must leave out)."""
    game = make_game(start=START, days=300)
    key = make_key(game)
    for back in range(months):
        played = NOW - timedelta(days=31 * back)
        body = match_body([{"player_id": f"p{back}", "points": 10 + back}], played_at=played)
        assert submit_direct(game, key, body, now=played + timedelta(seconds=5)).http_status == 202
    drain()
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {EVENTS}")
        cursor.execute(f"ANALYZE {CLAIMS}")
    return game, key


def partitions_read(job: Callable[[], Any]) -> list[tuple[str, set[str]]]:
    """Run `job`, then EXPLAIN each statement it sent that touches the ledger (in a rolled-back
    transaction): the ledger partitions each one reads."""
    with CaptureQueriesContext(connection) as captured:
        job()
    found = []
    for query in captured.captured_queries:
        sql = query["sql"]
        if EVENTS not in sql and CLAIMS not in sql:
            continue
        if not sql.lstrip().upper().startswith(("SELECT", "WITH", "UPDATE", "DELETE", "INSERT")):
            continue
        if sql.lstrip().upper().startswith("INSERT") and "SELECT" not in sql.upper():
            continue
        # A statement that writes is planned, not run again (the partitions its plan keeps: those
        # pruned at plan time are gone from it); a read is run, and counts the partitions it scanned.
        writes = any(word in sql.upper() for word in ("INSERT ", "UPDATE ", "DELETE "))
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN ({'' if writes else 'ANALYZE, '}FORMAT JSON) {sql}")
                plan = cursor.fetchone()[0]
                raise _RollBack(plan)
        except _RollBack as rolled:
            plan = rolled.plan
        scanned: set[str] = set()
        _scanned(plan if isinstance(plan, list) else json.loads(plan), scanned)
        found.append((sql, scanned))
    return found


class _RollBack(Exception):
    def __init__(self, plan: Any) -> None:
        self.plan = plan


def _scanned(node: Any, into: set[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _scanned(item, into)
        return
    if not isinstance(node, dict):
        return
    plan = node.get("Plan", node)
    relation = plan.get("Relation Name", "")
    if relation.startswith((EVENTS + "_y", CLAIMS + "_y")) and plan.get("Actual Loops", 1) > 0:
        into.add(relation)
    for child in plan.get("Plans", []):
        _scanned(child, into)


def names(months: list[Any], tables=(EVENTS, CLAIMS)) -> set[str]:
    return {partition_name(t, m) for m in months for t in tables}


def every_partition() -> set[str]:
    return {p.name for p in partitions_list()}


def test_the_job_creates_months_ahead_and_a_late_month_gets_its_partitions_on_demand():
    partitions_ahead(now=NOW, months=3)
    assert months_ahead(now=NOW) >= 3
    assert partitions_ahead(now=NOW, months=3) == []  # nothing left to do
    game = make_game(start=datetime(2019, 12, 1, tzinfo=UTC), days=3000)
    key = make_key(game)
    old = datetime(2020, 2, 10, 12, tzinfo=UTC)
    assert partition_name(EVENTS, month_of(old)) not in every_partition()
    outcome = submit_direct(game, key, match_body([{"player_id": "maya", "points": 5}], played_at=old), now=NOW)
    assert outcome.http_status == 202
    assert names([month_of(old)]) <= every_partition()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {partition_name(EVENTS, month_of(old))}")
        assert cursor.fetchone()[0] == 1


def test_a_match_is_claimed_once_in_its_month_and_a_replay_is_answered_from_it():
    game, key = seeded(months=3)
    played = NOW - timedelta(days=40)
    body = match_body([{"player_id": "maya", "points": 50}], played_at=played)
    first = submit_direct(game, key, body, now=NOW)
    match_id = first.body["match_id"]
    again = submit_direct(game, key, body, now=NOW, match_id=uuid.UUID(match_id))
    assert (again.http_status, again.body) == (200, first.body)
    # The same match id, another played_at in the same month: a conflict, nothing stored.
    moved = match_body([{"player_id": "maya", "points": 50}], played_at=played + timedelta(seconds=1))
    conflict = submit_direct(game, key, moved, now=NOW, match_id=uuid.UUID(match_id))
    assert (conflict.http_status, conflict.body["code"]) == (409, "idempotency_conflict")
    assert ScoreEvent.objects.filter(match_id=match_id).count() == 1
    claim = MatchSubmission.objects.get(match_id=match_id)
    assert claim.played_month == month_of(played)


def test_the_claim_lookup_and_the_worker_read_only_the_month_of_the_match():
    game, key = seeded(months=6)
    played = NOW - timedelta(days=62)
    month = month_of(played)
    body = match_body([{"player_id": "maya", "points": 50}, {"player_id": "leo", "points": 40}], played_at=played)
    plans = partitions_read(lambda: submit_direct(game, key, body, now=NOW))
    reads = [scanned for sql, scanned in plans if "SELECT found.match_id" in sql]
    assert reads and all(scanned <= names([month], (CLAIMS,)) for scanned in reads)

    events = list(ScoreEvent.objects.filter(player_id__in=["maya", "leo"]))
    outbox_restore(events)
    # The worker's read of its events (what `events_apply_by_id` reads first), with them waiting.
    plans = partitions_read(lambda: _unapplied_rows([e.id for e in events]))
    worker = [scanned for sql, scanned in plans if "WITH waiting AS MATERIALIZED" in sql]
    assert worker == [names([month], (EVENTS,))]  # one partition of six, row by row
    events_apply_by_id(event_ids=[e.id for e in events], dedup_ttl_s=3600)


def test_a_rebuild_and_the_reconciliation_read_the_seasons_months_only():
    seeded(months=4)
    other = make_game("other", start=NOW - timedelta(days=20), days=10)  # a season of its own months
    okey = make_key(other)
    played = NOW - timedelta(days=15)
    body = match_body([{"player_id": "zed", "points": 1}], played_at=played)
    assert submit_direct(other, okey, body, now=played + timedelta(seconds=5)).http_status == 202
    drain()
    boards_recover_if_lost()  # the boards marker, as the beat writes it at the first start
    window = set(months_spanned(NOW - timedelta(days=20), NOW - timedelta(days=10)))
    for job in (lambda: boards_rebuild(game=other), lambda: boards_reconcile(game=other, full=True)):
        plans = partitions_read(job)
        ledger = [(sql, scanned) for sql, scanned in plans if EVENTS in sql]
        assert ledger, "the job read the ledger"
        for sql, scanned in ledger:
            assert scanned <= names(sorted(window), (EVENTS,)), (sql, scanned)


def test_the_anomaly_job_reads_the_months_of_seasons_open_in_its_window():
    game, _ = seeded(months=6)
    plans = partitions_read(lambda: anomalies_review(game=game, now=NOW))
    ledger = [scanned for sql, scanned in plans if EVENTS in sql]
    assert ledger
    season = game.seasons.get()
    allowed = names(months_spanned(season.starts_at, NOW + timedelta(days=1)), (EVENTS,))
    for scanned in ledger:
        assert scanned <= allowed


def test_the_review_queue_and_moderation_go_through_indexes_only():
    """Pending rows may sit in any month kept, and moderation names results by id: these read every
    partition, but by an index each (the pending rows' partial index, the primary key), never a
    scan of the rows. Checked with sequential scans disabled: a plan that still has one has no
    index to use (on tables this small the planner would otherwise rightly prefer the scan)."""
    seeded(months=6)
    events = list(ScoreEvent.objects.filter(status=EventStatus.ACCEPTED)[:2])
    with CaptureQueriesContext(connection) as captured:
        review_pending_counts()
        results_revoke(event_ids=[e.id for e in events], reason="test")
    checked = 0
    for query in captured.captured_queries:
        sql = query["sql"]
        if EVENTS not in sql or not sql.lstrip().upper().startswith(("SELECT", "UPDATE")):
            continue
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
            plan = cursor.fetchone()[0]
        assert not _seq_scans(plan if isinstance(plan, list) else json.loads(plan)), sql
        checked += 1
    assert checked >= 3


def _seq_scans(node: Any) -> list[str]:
    if isinstance(node, list):
        return [name for item in node for name in _seq_scans(item)]
    plan = node.get("Plan", node)
    found = (
        [plan["Relation Name"]]
        if plan.get("Node Type") == "Seq Scan" and plan.get("Relation Name", "").startswith(EVENTS)
        else []
    )
    return found + [name for child in plan.get("Plans", []) for name in _seq_scans(child)]


def test_a_league_periods_end_reads_its_months_only():
    """The period's end joins a million results to the ledger at scale: each by its id within the
    period's months (a constant range), never a probe of every month's primary key."""
    game, key = seeded(months=6)
    league = make_league(game, cohort_size=5)
    at = league.starts_at + timedelta(hours=1, minutes=30)  # period 2, past its grace by now
    for player, points in [("maya", 50), ("leo", 30)]:
        body = match_body([{"player_id": player, "points": points}], played_at=at)
        assert submit_direct(game, key, body, now=at + timedelta(seconds=5)).http_status == 202
    drain()
    plans = partitions_read(lambda: league_period_close(league_id=league.pk, index=2, now=timezone.now()))
    ledger = [(sql, scanned) for sql, scanned in plans if EVENTS in sql]
    assert ledger
    for sql, scanned in ledger:
        assert scanned <= names(months_spanned(at - timedelta(hours=2), at + timedelta(hours=2)), (EVENTS,)), sql
