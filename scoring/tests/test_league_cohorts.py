"""Cohort assignment (docs/api.md, "Leagues"): a player's first accepted result of a period seats
them in their division's open cohort, exactly under concurrency (every cohort but the last of a
division full, no player in two), recorded in the ledger in the submission's transaction, given
back when that transaction fails, and filled again from the ledger after Redis lost it."""

import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from anticheat.services import ban_record
from common.redis import boards_client
from competitions import league_keys
from competitions.league_models import LeagueCohort, LeagueMember, LeaguePlayer
from competitions.testing import make_league
from scoring import services
from scoring.models import LeagueResult
from scoring.testing import make_game, make_key, match_body, submit_direct
from scoring.validation import validate_match

pytestmark = pytest.mark.django_db


def members(league, period=None):
    """{(division, number): sorted players} of a period (the active one by default)."""
    found: dict[tuple[int, int], list[str]] = {}
    rows = LeagueMember.objects.filter(league=league)
    if period is not None:
        rows = rows.filter(period=period)
    for player_id, division, number in rows.values_list("player_id", "division", "number"):
        found.setdefault((division, number), []).append(player_id)
    return {k: sorted(v) for k, v in sorted(found.items())}


def send(game, key, players, *, now=None, played_at=None):
    body = match_body([{"player_id": p, "points": 10} for p in players], played_at=played_at or now)
    return submit_direct(game, key, body, now=now or timezone.now())


def test_first_results_fill_cohorts_in_order_and_later_results_keep_the_seat():
    game = make_game()
    key = make_key(game)
    league = make_league(game)
    send(game, key, ["p1", "p2"])
    send(game, key, ["p3", "p4", "p1"])
    send(game, key, ["p5", "p6", "p7"])
    assert members(league) == {(0, 1): ["p1", "p2", "p3"], (0, 2): ["p4", "p5", "p6"], (0, 3): ["p7"]}
    assert LeagueMember.objects.get(player_id="p1").period == 4
    assert LeagueResult.objects.filter(player_id="p1").count() == 2
    assert set(LeagueResult.objects.filter(player_id="p1").values_list("division", "number")) == {(0, 1)}
    assert LeagueResult.objects.count() == 8
    assert sorted(LeagueCohort.objects.values_list("division", "number")) == [(0, 1), (0, 2), (0, 3)]
    state = boards_client().hgetall(league_keys.state_key(game.slug, league.slug, 4))
    assert (state["o:0"], state["c:0:3"], state["p:0"]) == ("3", "1", "7")


def test_only_accepted_results_seat_and_a_league_created_later_counts_nothing():
    game = make_game()
    key = make_key(game)
    ban_record(game=game, player_id="cheat")
    future = make_league(game, "later", created_at=timezone.now() + timedelta(minutes=5))
    league = make_league(game)
    send(game, key, ["cheat", "maya"])
    assert members(league) == {(0, 1): ["maya"]}
    assert not LeagueMember.objects.filter(league=future).exists()
    assert list(LeagueResult.objects.values_list("player_id", flat=True)) == ["maya"]


def test_a_batchs_matches_work_out_each_leagues_period_once_also_when_none_holds_them(monkeypatch):
    """Results played before a league's first period count in none; a batch of them asks the
    schedule once per played_at, not once per match, and a later match in the period is seated."""
    from scoring import league_entries

    game = make_game()
    league = make_league(game)
    asked = []
    real = league_entries.league_period_holding
    monkeypatch.setattr(
        league_entries, "league_period_holding", lambda lg, moment: asked.append(moment) or real(lg, moment)
    )
    now = timezone.now()
    before = league.starts_at - timedelta(minutes=30)
    found = league_entries.PeriodsFound()
    for _ in range(3):
        [early] = league_entries.seats_of_results(
            leagues=[league], results=[("early", True)], played_at=before, now=now, found=found
        )
        assert early == []
    [seats] = league_entries.seats_of_results(
        leagues=[league], results=[("late", True)], played_at=now, now=now, found=found
    )
    [seat] = seats
    assert (seat.player_id, seat.period.index) == ("late", 4)
    assert asked == [before, now]


def test_seated_players_take_their_seat_from_the_map_and_only_the_others_ask_for_their_division(monkeypatch):
    from competitions import league_assign

    game = make_game()
    key = make_key(game)
    league = make_league(game)
    send(game, key, ["p1", "p2"])
    asked = []
    real = league_assign.divisions_of

    def divisions_counted(*, league, index, player_ids):
        ids = sorted(player_ids)
        asked.append(ids)
        return real(league=league, index=index, player_ids=ids)

    monkeypatch.setattr(league_assign, "divisions_of", divisions_counted)
    send(game, key, ["p1", "p3", "p2"])
    send(game, key, ["p2", "p1"])
    assert asked == [["p3"]]
    assert members(league) == {(0, 1): ["p1", "p2", "p3"]}
    assert list(LeagueResult.objects.filter(player_id="p2").values_list("division", "number")) == [(0, 1)] * 3


def test_the_division_comes_from_the_players_row_else_the_lowest():
    game = make_game()
    key = make_key(game)
    league = make_league(game)
    LeaguePlayer.objects.create(league=league, player_id="ace", division=2, period=3)
    LeaguePlayer.objects.create(league=league, player_id="mid", division=1, period=3)
    send(game, key, ["ace", "mid", "new"])
    assert members(league) == {(0, 1): ["new"], (1, 1): ["mid"], (2, 1): ["ace"]}


def test_a_player_of_a_period_not_ended_yet_waits_for_its_end():
    game = make_game()
    key = make_key(game)
    league = make_league(game)
    period_4 = league.starts_at + timedelta(hours=3, minutes=30)
    send(game, key, ["maya"], now=period_4)
    in_grace = league.starts_at + timedelta(hours=4, seconds=30)  # period 5 runs, 4 is in its grace
    send(game, key, ["maya", "leo"], now=in_grace)
    assert members(league, 5) == {(0, 1): ["leo"]}
    waiting = LeagueResult.objects.get(player_id="maya", period=5)
    assert (waiting.division, waiting.number) == (None, None)
    late = send(game, key, ["maya"], now=in_grace, played_at=period_4 + timedelta(minutes=20))
    assert late.http_status == 202
    assert LeagueResult.objects.filter(player_id="maya", period=4).count() == 2  # the grace still counts


def test_demote_idle_makes_every_player_with_a_division_wait_for_the_earlier_end():
    game = make_game()
    key = make_key(game)
    league = make_league(game, demote_idle=True)
    LeaguePlayer.objects.create(league=league, player_id="ace", division=2, period=3)
    in_grace = league.starts_at + timedelta(hours=4, seconds=30)
    send(game, key, ["ace", "new"], now=in_grace)
    assert members(league, 5) == {(0, 1): ["new"]}
    assert LeagueResult.objects.get(player_id="ace").number is None


def test_a_transaction_that_fails_gives_its_seats_back_and_the_next_players_fill_them(monkeypatch):
    game = make_game()
    key = make_key(game)
    league = make_league(game)
    send(game, key, ["p1", "p2"])

    def broken(**kwargs):
        raise RuntimeError("the ledger failed")

    real = services._league_results_insert
    monkeypatch.setattr(services, "_league_results_insert", broken)
    with pytest.raises(RuntimeError):
        send(game, key, ["p3", "p4"])  # p3 took 1:3, p4 opened cohort 2: both given back
    monkeypatch.setattr(services, "_league_results_insert", real)
    assert members(league) == {(0, 1): ["p1", "p2"]}
    send(game, key, ["p5", "p6", "p7", "p8"])
    assert members(league) == {(0, 1): ["p1", "p2", "p5"], (0, 2): ["p6", "p7", "p8"]}
    map_key = league_keys.members_key(game.slug, league.slug, 4)
    assert boards_client().hget(map_key, "p3") is None


def test_a_lost_state_is_filled_again_from_the_ledger():
    game = make_game()
    key = make_key(game)
    league = make_league(game)
    send(game, key, ["p1", "p2", "p3", "p4"])
    boards_client().flushall()
    send(game, key, ["p4", "p5", "p6", "p7"])
    assert members(league) == {(0, 1): ["p1", "p2", "p3"], (0, 2): ["p4", "p5", "p6"], (0, 3): ["p7"]}
    assert LeagueResult.objects.filter(player_id="p4").values_list("number", flat=True).distinct().get() == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_results_fill_every_cohort_exactly():
    """1,200 players (a third of them silver) send their first results at once from 8 threads,
    in batches of matches with two players each: every cohort but the last of each division has
    exactly cohort_size players, nobody is in two, and Redis agrees with the ledger."""
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=30)
    players = [f"p{i:04d}" for i in range(1200)]
    LeaguePlayer.objects.bulk_create(
        [LeaguePlayer(league=league, player_id=p, division=1, period=3) for p in players[::3]]
    )

    def batch(start: int) -> None:
        try:
            now = timezone.now()
            matches = []
            for i in range(start, start + 40, 2):
                mid = uuid.uuid4()
                body = match_body([{"player_id": players[i], "points": 5}, {"player_id": players[i + 1], "points": 3}])
                parsed, errors = validate_match(body, match_id=mid, max_points=10_000, now=now, max_future_s=60)
                matches.append((mid, parsed, errors))
            outcomes = services.matches_submit(game=game, key=key, matches=matches, now=now)
            assert {o.http_status for o in outcomes} == {202}
        finally:
            connection.close()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(batch, range(0, 1200, 40)))
    seats = members(league)
    assert sum(len(v) for v in seats.values()) == 1200
    assert Counter(p for v in seats.values() for p in v).most_common(1)[0][1] == 1
    for division, expected in ((0, 800), (1, 400)):
        sizes = [len(v) for (d, _), v in seats.items() if d == division]
        assert sum(sizes) == expected
        assert sizes[:-1] == [30] * (len(sizes) - 1), sizes
        assert [n for (d, n) in seats if d == division] == list(range(1, len(sizes) + 1))
    assert sorted(seats[(1, 1)]) == sorted(p for p in seats[(1, 1)] if p in players[::3])
    redis_map = boards_client().hgetall(league_keys.members_key(game.slug, league.slug, 4))
    assert redis_map == {p: f"{d}:{n}" for (d, n), found in seats.items() for p in found}
