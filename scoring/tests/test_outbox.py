"""The outbox (`UnappliedEvent`) and the apply records (`ApplyRecord`): a row per accepted event
until its apply succeeded, deleted then (never an UPDATE of the ledger row), a record of when; the
relay finds exactly what is left, by flag, whatever order the rows committed in; a crash between
the Lua call and the delete is re-sent and skipped for its marker; the prune keeps what the relay
and the marker check need; every status change keeps the outbox equal to "accepted, not applied"."""

import threading
from datetime import timedelta

import psycopg
import pytest
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from boards import keys
from boards.epoch import epoch_get
from common.redis import client as redis_client
from scoring import outbox, tasks
from scoring.models import ApplyRecord, EventStatus, ScoreEvent, UnappliedEvent
from scoring.moderation import _withhold, player_ban, results_approve, results_reinstate, results_revoke
from scoring.outbox import apply_records_prune, events_apply_by_id, outbox_vacuum, unapplied_select
from scoring.recovery import boards_recover_if_lost
from scoring.selectors import boards_diff, queue_lag_s
from scoring.testing import drain, make_game, make_key, match_body, submit_direct, unapplied
from scoring.unreflected import unreflected_check


def accepted_now(game, key, player: str, points: int = 5) -> ScoreEvent:
    submit_direct(game, key, match_body([{"player_id": player, "points": points}]), now=timezone.now())
    return ScoreEvent.objects.filter(player_id=player).latest("id")


def outbox_ids() -> set[int]:
    return set(UnappliedEvent.objects.values_list("event_id", flat=True))


def relay_picks(*, after_s: float = 0) -> list[int]:
    now = timezone.now()
    with transaction.atomic():
        return unapplied_select(
            older_than=now - timedelta(seconds=after_s) + timedelta(seconds=1),
            stale_enqueue_before=now - timedelta(seconds=30),
            limit=1000,
        )


@pytest.mark.django_db
def test_an_accepted_result_waits_in_the_outbox_and_leaves_it_when_applied_with_a_record():
    game = make_game()
    key = make_key(game)
    event = accepted_now(game, key, "a")
    row = UnappliedEvent.objects.get()
    assert (row.event_id, row.accepted_at, row.enqueued_at) == (event.id, event.accepted_at, None)
    assert queue_lag_s(now=event.accepted_at + timedelta(seconds=3)) == pytest.approx(3.0)
    report = events_apply_by_id(event_ids=[event.id], dedup_ttl_s=600)
    assert (report.applied, report.on_boards) == (1, [event.id])
    assert not UnappliedEvent.objects.exists()
    [record] = ApplyRecord.objects.all()
    assert (record.event_ids, record.first_id, record.last_id) == ([event.id], event.id, event.id)
    assert queue_lag_s(now=timezone.now()) == 0.0
    # A second task for the same event (a resend) reads nothing and records nothing.
    assert events_apply_by_id(event_ids=[event.id], dedup_ttl_s=600).applied == 0
    assert ApplyRecord.objects.count() == 1


@pytest.mark.django_db
def test_a_crash_between_the_lua_apply_and_the_delete_is_re_sent_by_the_relay_and_skipped(monkeypatch):
    game = make_game()
    key = make_key(game)
    event = accepted_now(game, key, "a", points=5)

    def killed(event_ids):  # the worker dies after its Lua call, before the delete
        raise SystemExit("SIGKILL")

    monkeypatch.setattr(outbox, "outbox_applied", killed)
    with pytest.raises(SystemExit):
        events_apply_by_id(event_ids=[event.id], dedup_ttl_s=600)
    monkeypatch.undo()
    board = keys.BoardRef("arena", event.season_id, "all").key
    assert redis_client().zscore(board, "a") is not None  # on the boards, with its marker
    assert outbox_ids() == {event.id}  # "applied" was not made durable
    assert relay_picks() == [event.id]  # the relay finds it and sends it again
    report = events_apply_by_id(event_ids=[event.id], dedup_ttl_s=600)
    assert (report.applied, report.skipped) == (0, 1)  # its marker: not counted twice
    assert not UnappliedEvent.objects.exists()
    assert boards_diff(game=game, now=timezone.now()) == {}


@pytest.mark.django_db
def test_the_relay_finds_exactly_the_accepted_unapplied_results(settings):
    settings.SCORING_RELAY_AFTER_S = 0
    game = make_game(max_points=2**31)
    key = make_key(game)
    applied = accepted_now(game, key, "applied")
    drain()
    waiting = accepted_now(game, key, "waiting")
    revoked = accepted_now(game, key, "revoked")
    results_revoke(event_ids=[revoked.id], reason="test")  # before its apply: it never will be
    submit_direct(game, key, match_body([{"player_id": "big", "points": 2**29}]), now=timezone.now())
    submit_direct(game, key, match_body([{"player_id": "big", "points": 2**29}]), now=timezone.now())
    overflowed = ScoreEvent.objects.get(player_id="big", status=EventStatus.REJECTED)
    big = ScoreEvent.objects.get(player_id="big", status=EventStatus.ACCEPTED)
    assert outbox_ids() == {waiting.id, big.id}
    assert set(unapplied().values_list("id", flat=True)) == {waiting.id, big.id}
    assert applied.id not in outbox_ids() and overflowed.id not in outbox_ids()
    assert relay_picks(after_s=60) == []  # not stale yet
    assert relay_picks() == sorted([waiting.id, big.id])
    assert UnappliedEvent.objects.filter(enqueued_at__isnull=False).count() == 2
    assert relay_picks() == []  # each re-sent at most every 30 s


@pytest.mark.django_db(transaction=True)
def test_the_relay_picks_rows_committed_out_of_order_and_skips_those_another_relay_holds():
    game = make_game()
    key = make_key(game)
    first, second, third = (accepted_now(game, key, p) for p in ("x", "y", "z"))
    UnappliedEvent.objects.all().delete()
    url = connection.settings_dict
    dsn = f"postgresql://{url['USER']}@{url['HOST']}:{url['PORT']}/{url['NAME']}"
    table = UnappliedEvent._meta.db_table
    at = timezone.now() - timedelta(seconds=10)
    insert = f"INSERT INTO {table} (event_id, played_at, accepted_at) VALUES (%s, %s, %s)"
    with psycopg.connect(dsn) as slow, psycopg.connect(dsn, autocommit=True) as fast:
        # The lower id's transaction began first and commits last.
        slow.execute(insert, [first.id, first.played_at, at])
        fast.execute(insert, [third.id, third.played_at, at])
        assert relay_picks() == [third.id]
        slow.commit()
        assert relay_picks() == [first.id]  # an id watermark past third.id would have skipped it
        # Another relay holds a row: SKIP LOCKED passes it over instead of waiting.
        fast.execute(insert, [second.id, second.played_at, at])
        with fast.transaction():
            fast.execute(f"SELECT 1 FROM {table} WHERE event_id = %s FOR UPDATE", [second.id])
            picked: list[int] = []

            def other_relay() -> None:
                try:
                    picked.extend(relay_picks())
                finally:
                    connection.close()  # this thread's own connection

            thread = threading.Thread(target=other_relay)
            thread.start()
            thread.join(timeout=5)
            assert not thread.is_alive() and picked == []
        assert relay_picks() == [second.id]


@pytest.mark.django_db
def test_every_status_change_keeps_the_outbox_equal_to_accepted_and_not_applied():
    game = make_game()
    key = make_key(game)
    a = accepted_now(game, key, "a")
    b = accepted_now(game, key, "b")
    c = accepted_now(game, key, "c")
    assert outbox_ids() == {a.id, b.id, c.id}
    results_revoke(event_ids=[a.id], reason="test")
    assert outbox_ids() == {b.id, c.id}
    results_reinstate(event_ids=[a.id], reason="test")
    a.refresh_from_db()
    assert outbox_ids() == {a.id, b.id, c.id}
    assert UnappliedEvent.objects.get(event_id=a.id).accepted_at == a.accepted_at  # the new accept time
    _withhold([b], reason="test")  # the anomaly job holds it before its apply
    assert outbox_ids() == {a.id, c.id}
    results_approve(event_ids=[b.id], reason="test")
    assert outbox_ids() == {a.id, b.id, c.id}  # approved: down the normal apply path
    player_ban(game=game, player_id="c", reason="test", revoke_since=timezone.now() - timedelta(days=1))
    assert outbox_ids() == {a.id, b.id}
    drain()
    assert outbox_ids() == set() and not unapplied().exists()
    player_ban(game=game, player_id="b", reason="test", revoke_since=timezone.now() - timedelta(days=1))
    assert outbox_ids() == set()
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert {e.player_id: e.status for e in ScoreEvent.objects.all()} == {
        "a": EventStatus.ACCEPTED,
        "b": EventStatus.REVOKED,
        "c": EventStatus.REVOKED,
    }


@pytest.mark.django_db
def test_the_prune_keeps_what_the_relay_and_the_marker_check_need():
    boards_recover_if_lost()  # the boards marker
    assert epoch_get() is not None
    game = make_game()
    key = make_key(game)
    before = timezone.now() - timedelta(minutes=5)
    for player in ("a", "b", "c"):
        submit_direct(game, key, match_body([{"player_id": player, "points": 3}], before), now=before)
    waiting = accepted_now(game, key, "waiting")
    ScoreEvent.objects.filter(id=waiting.id).update(accepted_at=timezone.now() - timedelta(hours=7))
    UnappliedEvent.objects.filter(event_id=waiting.id).update(accepted_at=timezone.now() - timedelta(hours=7))
    drain_ids = list(ScoreEvent.objects.exclude(id=waiting.id).values_list("id", flat=True))
    events_apply_by_id(event_ids=drain_ids, dedup_ttl_s=settings.SCORING_DEDUP_TTL_S)
    old = ApplyRecord.objects.create(
        applied_at=timezone.now() - timedelta(seconds=settings.SCORING_DEDUP_TTL_S + 60),
        event_ids=[10**12],
        first_id=10**12,
        last_id=10**12,
    )
    assert tasks.relay_unapplied() == 1  # unapplied for 7 hours: the relay still finds it
    assert not ApplyRecord.objects.filter(id=old.id).exists()  # and prunes the record past the lifetime
    assert ApplyRecord.objects.count() == 1  # the recent apply, which the marker check judges by
    assert outbox_ids() == {waiting.id}
    assert ScoreEvent.objects.filter(status=EventStatus.ACCEPTED).count() == 4
    report = unreflected_check(repair=False, now=timezone.now() + timedelta(seconds=120))
    assert (report.checked, report.missing) == (3, 0)
    apply_records_prune(before=timezone.now() + timedelta(seconds=1))
    assert unreflected_check(repair=False, now=timezone.now() + timedelta(seconds=120)).checked == 0


@pytest.mark.django_db(transaction=True)
def test_the_relay_vacuums_an_outbox_full_of_applied_rows():
    game = make_game()
    key = make_key(game)
    table = UnappliedEvent._meta.db_table
    with connection.cursor() as cursor:  # autovacuum, taking the dead rows first, would leave ours nothing to do
        cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        cursor.execute(f"ANALYZE {table}")  # its live-rows count as it is now, not as earlier tests left it
    try:
        for n in range(30):
            accepted_now(game, key, f"p{n}")
        drain()
        assert outbox_vacuum(dead_min=10**9) == []  # below the threshold: nothing to do
        vacuumed: list[str] = []
        for _ in range(100):  # the statistics reach pg_stat_user_tables within a second or so
            vacuumed = outbox_vacuum(dead_min=10)
            if vacuumed:
                break
            threading.Event().wait(0.1)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")
    assert table in vacuumed
