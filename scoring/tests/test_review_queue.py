"""The review queue at ledger scale: pending first, cheap filters, exact search, no count or scan of
the ledger, the evidence on the item's page, and deciding there lands on the next pending item."""

import re
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from anticheat.models import AuditEntry
from anticheat.services import ban_record, game_rules_set
from scoring.models import AnomalyScan, ScoreEvent
from scoring.moderation import results_revoke
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db

QUEUE = "/admin/scoring/reviewitem/"


def held(game, key, player: str, points: int, *, now, duration_s: int = 540, others=()):
    """A result the points-per-minute rule holds (the game's rule is set by `queue`)."""
    body = match_body([{"player_id": player, "points": points}, *others], played_at=now, duration_s=duration_s)
    submit_direct(game, key, body, now=now)


def queue():
    """Two games with pending items (arena: 3, blitz: 1), one game with none (calm), and accepted
    results around them."""
    now = timezone.now() - timedelta(minutes=30)
    arena, blitz, calm = make_game("arena"), make_game("blitz"), make_game("calm")
    for game in (arena, blitz, calm):
        game_rules_set(game=game, max_points_per_minute=100)
    ka, kb, kc = make_key(arena), make_key(blitz), make_key(calm)
    submit_direct(calm, kc, match_body([{"player_id": "cal", "points": 50}], played_at=now), now=now)
    submit_direct(arena, ka, match_body([{"player_id": "amy", "points": 300}], played_at=now), now=now)
    held(arena, ka, "amy", 9000, now=now + timedelta(seconds=1), others=[{"player_id": "ann", "points": 40}])
    held(arena, ka, "bob", 8000, now=now + timedelta(seconds=2))
    held(blitz, kb, "cid", 7000, now=now + timedelta(seconds=3))
    held(arena, ka, "dan", 6000, now=now + timedelta(seconds=4))
    drain()
    return arena, blitz, calm


def pending_ids(**filters) -> list[int]:
    return list(
        ScoreEvent.objects.filter(status="pending_review", **filters)
        .order_by("accepted_at", "id")
        .values_list("id", flat=True)
    )


def test_the_queue_opens_on_pending_items_oldest_first(client, moderator):
    queue()
    client.force_login(moderator)
    page = client.get(QUEUE)
    assert page.status_code == 200
    rows = list(page.context["cl"].result_list)
    assert [r.player_id for r in rows] == ["amy", "bob", "cid", "dan"]
    assert all(r.status == "pending_review" for r in rows)
    assert page.context["cl"].result_count == 4
    assert "1,000 points/min, limit 100" in page.content.decode()  # each row's number against its limit
    assert QUEUE in client.get("/admin/").content.decode()  # on the admin's index for moderators


def test_the_game_filter_lists_only_games_with_pending_items(client, moderator):
    _, blitz, _ = queue()
    client.force_login(moderator)
    page = client.get(QUEUE)
    [games] = [spec for spec in page.context["cl"].filter_specs if spec.parameter_name == "game"]
    assert [label for _, label in games.lookup_choices] == ["arena (3)", "blitz (1)"]
    by_game = client.get(QUEUE, {"game": blitz.id})
    assert [row.player_id for row in by_game.context["cl"].result_list] == ["cid"]


def test_filter_by_reason_and_search_an_exact_player_id(client, moderator):
    queue()
    ScoreEvent.objects.filter(player_id="dan").update(reason="rate")
    client.force_login(moderator)
    rate = client.get(QUEUE, {"reason": "rate"})
    assert [row.player_id for row in rate.context["cl"].result_list] == ["dan"]
    found = client.get(QUEUE, {"q": "bob"})
    assert [row.player_id for row in found.context["cl"].result_list] == ["bob"]
    assert list(client.get(QUEUE, {"q": "bo"}).context["cl"].result_list) == []  # exact, no icontains
    amy = ScoreEvent.objects.get(player_id="amy", status="pending_review")
    assert [r.id for r in client.get(QUEUE, {"q": f"#{amy.id}"}).context["cl"].result_list] == [amy.id]
    assert [r.id for r in client.get(QUEUE, {"q": str(amy.match_id)}).context["cl"].result_list] == [amy.id]


def test_resolved_items_show_who_decided_when_and_why(client, moderator):
    queue()
    client.force_login(moderator)
    bob = ScoreEvent.objects.get(player_id="bob")
    results_revoke(event_ids=[bob.id], reason="aimbot on replay", actor=moderator)
    assert bob.id not in [r.id for r in client.get(QUEUE).context["cl"].result_list]
    resolved = client.get(QUEUE, {"queue": "resolved"})
    [row] = resolved.context["cl"].result_list
    assert row.id == bob.id
    assert "revoke by mod" in resolved.content.decode() and "aimbot on replay" in resolved.content.decode()


def ledger_reads(captured) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if '"scoring_scoreevent"' in q["sql"]]


def on_the_queue(sql: str) -> bool:
    """A read of the ledger names the condition of a partial index, or the ids it wants."""
    return "'pending_review'" in sql or '"reviewed_at" IS NOT NULL' in sql or re.search(r'"id" (IN \(|= )', sql)


def test_no_query_of_the_change_list_counts_or_scans_the_ledger(client, moderator):
    arena, _, _ = queue()
    client.force_login(moderator)
    for params in (
        {},
        {"game": arena.id},
        {"reason": "points_per_minute"},
        {"q": "amy"},
        {"p": 2},
        {"queue": "resolved"},
    ):
        with CaptureQueriesContext(connection) as captured:
            assert client.get(QUEUE, params).status_code in (200, 302)
        assert ledger_reads(captured), params
        for sql in ledger_reads(captured):
            assert on_the_queue(sql), (params, sql)
            if re.search(r"COUNT\(", sql):
                assert "LIMIT" in sql or "GROUP BY" in sql, sql  # the pager's capped count, or the filters'
    # A bulk action (the page is built again on its POST): by ids, never the ledger's order.
    ids = pending_ids()[:2]
    with CaptureQueriesContext(connection) as captured:
        form = {"action": "approve", "_selected_action": ids, "confirm": "yes", "reason": "verified"}
        assert client.post(QUEUE, form).status_code == 302
    for sql in ledger_reads(captured):
        assert on_the_queue(sql) or "SeasonTotal" in sql, sql
    assert ScoreEvent.objects.filter(id__in=ids, status="accepted").count() == 2


def test_the_item_page_shows_the_evidence(client, moderator):
    arena, _, _ = queue()
    AnomalyScan.objects.create(
        game=arena, limit=5000, policy="0.9999/10000/7", computed_at=timezone.now(), checked_from_id=0, checked_to_id=0
    )
    ban_record(game=arena, player_id="amy", reason="old smurf")
    client.force_login(moderator)
    amy = ScoreEvent.objects.get(player_id="amy", status="pending_review")
    page = client.get(f"{QUEUE}{amy.id}/change/")
    assert page.status_code == 200
    evidence = page.context["evidence"]
    figures = {f.label: f for f in evidence.figures}
    assert figures["points"].value == "9,000" and "5,000" in figures["points"].limit and figures["points"].over
    assert figures["points per minute of play"].value == "1,000" and figures["points per minute of play"].over
    assert figures["match duration"].value == "540 s"
    assert [r.player_id for r in evidence.same_match] == ["amy", "ann"]
    assert [r.points for r in evidence.recent] == [9000, 300]
    assert [b.reason for b in evidence.bans] == ["old smurf"]
    html = page.content.decode()
    for text in ("p99.99", "more points per minute of play", "old smurf", "ann", 'id="approve"', 'id="revoke"'):
        assert text in html, text


def test_deciding_on_the_item_page_lands_on_the_next_pending_item(client, moderator):
    arena, _, _ = queue()
    client.force_login(moderator)
    amy, bob, cid, dan = pending_ids()
    decide = f"{QUEUE}{{}}/decide/"
    approved = client.post(decide.format(amy), {"decision": "approve", "reason": ""})
    assert approved.status_code == 302 and approved["Location"] == f"{QUEUE}{bob}/change/"
    refused = client.post(decide.format(bob), {"decision": "revoke", "reason": ""})
    assert refused["Location"] == f"{QUEUE}{bob}/change/"  # a revocation needs a reason
    assert ScoreEvent.objects.get(id=bob).status == "pending_review"
    revoked = client.post(decide.format(bob), {"decision": "revoke", "reason": "impossible score"})
    assert revoked["Location"] == f"{QUEUE}{cid}/change/"
    # Within the game the moderator filtered by: blitz's cid is skipped.
    kept = f"game={arena.id}"
    within = client.post(decide.format(dan), {"decision": "approve", "_changelist_filters": kept})
    assert within.status_code == 302
    assert ScoreEvent.objects.get(id=amy).status == "accepted" and ScoreEvent.objects.get(id=dan).status == "accepted"
    assert ScoreEvent.objects.get(id=bob).status == "revoked"
    assert within["Location"].startswith(QUEUE + "?")  # arena has nothing left pending: back to the list
    last = client.post(decide.format(cid), {"decision": "approve", "reason": "ok"})
    assert last["Location"] == QUEUE  # the queue is empty
    drain()
    decided = {(e.action, e.target, e.reason) for e in AuditEntry.objects.filter(actor=moderator)}
    assert ("revoke", str(bob), "impossible score") in decided and (
        "approve",
        str(amy),
        "approved on review",
    ) in decided
    assert client.get("/api/v1/games/arena/boards/all/players/amy").json()["score"] == 9300


def test_only_moderators_decide(client):
    queue()
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    client.force_login(viewer)
    [amy, *_] = pending_ids()
    assert client.post(f"{QUEUE}{amy}/decide/", {"decision": "approve"}).status_code == 403
    assert ScoreEvent.objects.get(id=amy).status == "pending_review"


def test_paging_through_pending_items_counts_them_without_a_count_query(client, moderator):
    arena, _, _ = queue()
    template = ScoreEvent.objects.filter(player_id="amy", status="pending_review").first()
    start = template.accepted_at + timedelta(seconds=10)
    ScoreEvent.objects.bulk_create(
        ScoreEvent(
            game=arena,
            season_id=template.season_id,
            match_id=uuid.uuid4(),
            player_id=f"bulk{i:03d}",
            points=7000,
            played_at=start,
            accepted_at=start + timedelta(seconds=i),
            duration_s=600,
            day=template.day,
            week=template.week,
            status="pending_review",
            reason="rate",
        )
        for i in range(60)
    )
    client.force_login(moderator)
    with CaptureQueriesContext(connection) as captured:
        second = client.get(QUEUE, {"p": 2})
    cl = second.context["cl"]
    assert cl.result_count == 64 and cl.paginator.num_pages == 2
    assert [row.player_id for row in cl.result_list] == [f"bulk{i:03d}" for i in range(46, 60)]
    assert not [q for q in ledger_reads(captured) if "COUNT(*)" in q]  # the count came from the grouped read
    searched = client.get(QUEUE, {"q": "bulk007"}).context["cl"]
    assert [row.player_id for row in searched.result_list] == ["bulk007"] and searched.result_count == 1


def test_the_moderators_group_comes_with_what_moderators_do_in_the_admin(client):
    """Migration 0011 makes the group with its permissions: a staff member added to it can read the
    audit log, record bans, configure seasons and see final standings, and nothing else (keys)."""
    import importlib

    from django.apps import apps

    grant = importlib.import_module("scoring.migrations.0011_moderators_group").grant
    grant(apps, None)  # as the migration did (a transactional test's flush may have removed the group)
    user = User.objects.create_user("new-moderator", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name="moderators"))
    client.force_login(user)
    for url in [
        QUEUE,
        "/admin/anticheat/auditentry/",
        "/admin/anticheat/ban/add/",
        "/admin/seasons/season/",
        "/admin/seasons/season/add/",
        "/admin/seasons/game/",
        "/admin/boards/seasonstandings/",
    ]:
        assert client.get(url).status_code == 200, url
    assert client.get("/admin/anticheat/serverkey/").status_code == 403
    assert client.get("/admin/auth/user/").status_code == 403
