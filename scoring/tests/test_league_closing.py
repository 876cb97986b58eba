"""A league period's end (docs/api.md, "Leagues", period end): every cohort frozen from the ledger
once, floor(promote x n / cohort_size) up and floor(demote x n / cohort_size) down, demote_idle,
one `league.cohort_final` event per cohort; once with concurrent closers, resumed after a closer
died half-way; the waiting players of the next period seated when it is done."""

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connection

from boards.models import Player
from boards.ranking import ranks_for
from competitions.league_models import LeagueCohort, LeagueMember, LeaguePeriod, LeaguePlayer, LeagueStanding
from competitions.testing import make_league
from events.models import Event
from scoring import league_closing
from scoring.league_closing import league_period_close, periods_to_close
from scoring.models import LeagueResult, ScoreEvent
from scoring.tasks import leagues_close
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db

DIVISIONS = [
    {"name": "bronze", "promote": 1, "demote": 0},
    {"name": "silver", "promote": 1, "demote": 1},
    {"name": "gold", "promote": 0, "demote": 1},
]


def send(game, key, points, now):
    body = match_body([{"player_id": p, "points": n} for p, n in points.items()], played_at=now)
    return submit_direct(game, key, body, now=now)


def divisions(league):
    return dict(LeaguePlayer.objects.filter(league=league).values_list("player_id", "division"))


def cohort_events():
    return [json.loads(e.data) for e in Event.objects.filter(type="league.cohort_final").order_by("id")]


def test_the_end_moves_players_by_the_zones_and_publishes_one_event_per_cohort(client):
    game = make_game()
    key = make_key(game)
    league = make_league(game, divisions=DIVISIONS)
    LeaguePlayer.objects.bulk_create(
        [LeaguePlayer(league=league, player_id=p, division=1, period=0) for p in ("s1", "s2", "s3")]
        + [LeaguePlayer(league=league, player_id="g1", division=2, period=0)]
    )
    at = league.starts_at + timedelta(minutes=30)  # period 1
    send(game, key, {"a": 30, "b": 20, "c": 10, "d": 5}, at)
    send(game, key, {"s1": 10, "s2": 20, "s3": 20, "g1": 1}, at + timedelta(seconds=1))
    send(game, key, {"s2": 5}, at + timedelta(seconds=2))
    assert periods_to_close(now=league.starts_at + timedelta(hours=1, seconds=30)) == []  # in its grace
    later = league.starts_at + timedelta(hours=1, minutes=2)
    assert (league.pk, 1) in periods_to_close(now=later)
    assert league_period_close(league_id=league.pk, index=1, now=later) is True
    assert league_period_close(league_id=league.pk, index=1, now=later) is False  # once
    # bronze 1 (a b c): 1 up; bronze 2 (d): floor(1 x 1 / 3) = 0 up; silver (s2 25, s3 20, s1 10): 1 up,
    # 1 down; gold (g1 alone): floor(1 x 1 / 3) = 0 down
    assert divisions(league) == {"a": 1, "b": 0, "c": 0, "d": 0, "s2": 2, "s3": 1, "s1": 0, "g1": 2}
    events = cohort_events()
    assert [e["cohort"] for e in events] == ["1-bronze-1", "1-bronze-2", "1-silver-1", "1-gold-1"]
    assert events[2] == {
        "league": "weekly",
        "period": 1,
        "division": "silver",
        "cohort": "1-silver-1",
        "entries": [
            {"player_id": "s2", "rank": 1, "score": 25, "outcome": "promoted", "division_to": "gold"},
            {"player_id": "s3", "rank": 2, "score": 20, "outcome": "stayed", "division_to": "silver"},
            {"player_id": "s1", "rank": 3, "score": 10, "outcome": "demoted", "division_to": "bronze"},
        ],
    }
    period = LeaguePeriod.objects.get()
    assert (period.state, period.cohorts, period.players) == ("final", 4, 8)
    history = client.get("/api/v1/games/arena/leagues/weekly/players/s2/history").json()
    assert history == {
        "periods": [
            {"index": 1, "division": "silver", "cohort": "1-silver-1", "rank": 1, "score": 25, "outcome": "promoted"}
        ]
    }
    frozen = client.get("/api/v1/games/arena/leagues/weekly/cohorts/1-silver-1").json()
    assert frozen["final"] is True
    assert [(e["player_id"], e["zone"]) for e in frozen["entries"]] == [
        ("s2", "promote"),
        ("s3", "stay"),
        ("s1", "demote"),
    ]


def test_demote_idle_moves_down_players_with_a_division_who_played_nothing():
    game = make_game()
    key = make_key(game)
    league = make_league(game, divisions=DIVISIONS, demote_idle=True)
    LeaguePlayer.objects.bulk_create(
        [
            LeaguePlayer(league=league, player_id="idle", division=2, period=0),
            LeaguePlayer(league=league, player_id="low", division=0, period=0),
            LeaguePlayer(league=league, player_id="busy", division=2, period=0),
        ]
    )
    send(game, key, {"busy": 3}, league.starts_at + timedelta(minutes=5))
    assert league_period_close(league_id=league.pk, index=1, now=league.starts_at + timedelta(hours=2))
    assert divisions(league) == {"idle": 1, "low": 0, "busy": 2}
    assert league_period_close(league_id=league.pk, index=1, now=league.starts_at + timedelta(hours=2)) is False
    assert divisions(league)["idle"] == 1  # once


def test_a_waiting_player_is_seated_in_the_division_the_end_gave_them():
    game = make_game()
    key = make_key(game)
    league = make_league(game, divisions=DIVISIONS)
    send(game, key, {"maya": 50, "leo": 1, "kim": 2}, league.starts_at + timedelta(minutes=30))
    in_grace = league.starts_at + timedelta(hours=1, seconds=20)
    send(game, key, {"maya": 7, "new": 3}, in_grace)
    assert LeagueResult.objects.get(player_id="maya", period=2).number is None
    drain()
    assert league_period_close(league_id=league.pk, index=1, now=in_grace + timedelta(minutes=1))
    seat = LeagueMember.objects.get(player_id="maya", period=2)
    assert (seat.division, seat.number) == (1, 1)  # promoted out of bronze
    assert LeagueResult.objects.get(player_id="maya", period=2).number == 1
    drain()
    from competitions.league_periods import league_period
    from competitions.league_reads import CohortRef, cohort_view

    view = cohort_view(CohortRef(league, league_period(league, 2), 1, 1), in_grace + timedelta(minutes=1))
    assert [(e["player_id"], e["score"]) for e in view["entries"]] == [("maya", 7)]


def _league_with_cohorts(n_players=40):
    game = make_game()
    key = make_key(game)
    league = make_league(game, divisions=DIVISIONS)
    at = league.starts_at + timedelta(minutes=10)
    for start in range(0, n_players, 10):
        send(game, key, {f"p{i:03d}": i for i in range(start, start + 10)}, at)
    return league


@pytest.mark.django_db(transaction=True)
def test_four_concurrent_closers_end_the_period_once():
    league = _league_with_cohorts()
    now = league.starts_at + timedelta(hours=2)

    def close(_):
        try:
            return league_period_close(league_id=league.pk, index=1, now=now, chunk=2)
        finally:
            connection.close()

    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(close, range(4)))
    assert outcomes.count(True) == 1, outcomes
    cohorts = LeagueCohort.objects.filter(league=league, period=1)
    assert cohorts.count() == 14 and not cohorts.filter(final_at__isnull=True).exists()
    assert len(cohort_events()) == 14
    assert sorted(e["cohort"] for e in cohort_events()) == sorted({e["cohort"] for e in cohort_events()})
    assert LeagueStanding.objects.count() == 40
    assert leagues_close() == 2  # the empty periods 2 and 3; period 1 is not ended again
    assert (len(cohort_events()), LeagueStanding.objects.count()) == (14, 40)


def test_a_closer_that_dies_half_way_is_resumed_by_the_next_run(monkeypatch):
    league = _league_with_cohorts()
    now = league.starts_at + timedelta(hours=2)
    real = league_closing._cohorts_freeze
    calls = []

    def dying(*args, **kwargs):
        if len(calls) == 3:
            raise SystemExit("killed")
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(league_closing, "_cohorts_freeze", dying)
    with pytest.raises(SystemExit):
        league_period_close(league_id=league.pk, index=1, now=now, chunk=2)
    assert LeagueCohort.objects.filter(final_at__isnull=False).count() == 6
    assert LeaguePeriod.objects.get().state == "closing"
    assert len(cohort_events()) == 6
    monkeypatch.setattr(league_closing, "_cohorts_freeze", real)
    assert leagues_close() >= 1
    assert LeaguePeriod.objects.get(index=1).state == "final"
    assert len(cohort_events()) == 14
    assert LeagueStanding.objects.count() == 40
    assert LeaguePlayer.objects.filter(league=league).count() == 40


def _reference(league, scores_by_cohort, rule):
    """The standings and event data of each cohort as the Python end computed them before the end
    was written in SQL: ordered by (-points, reached, player id by code point), ranked by the tie
    rule, zoned by floor(promote x n / size) and floor(demote x n / size)."""
    names = league.division_names
    out = {}
    for (division, number), scores in sorted(scores_by_cohort.items()):
        order = sorted(scores.items(), key=lambda item: (-item[1][0], item[1][1], item[0]))
        n = len(order)
        up = league.divisions[division]["promote"] * n // league.cohort_size
        down = league.divisions[division]["demote"] * n // league.cohort_size
        ranks = ranks_for([points for _, (points, _) in order], rule)
        entries = []
        for position, ((player_id, (points, _)), rank) in enumerate(zip(order, ranks, strict=True)):
            if position < up:
                outcome, to = "promoted", division + 1
            elif position >= n - down:
                outcome, to = "demoted", division - 1
            else:
                outcome, to = "stayed", division
            entries.append(
                {"player_id": player_id, "rank": rank, "score": points, "outcome": outcome, "division_to": names[to]}
            )
        cohort = f"1-{names[division]}-{number}"
        out[cohort] = {"league": league.slug, "period": 1, "division": names[division], "cohort": cohort}
        out[cohort]["entries"] = entries
    return out


@pytest.mark.parametrize(
    ("scoring", "rule"), [("sum", "competition"), ("best", "dense"), ("sum", "first"), ("best", "competition")]
)
def test_the_standings_postgresql_computes_are_the_reference_ones(scoring, rule):
    """Ties on points and on the reached second, results with no points, a revoked result, hidden
    and deleted players, ids ordered by code point (not by the database's collation): the end's
    standings and its events' exact text are the reference computation's."""
    game = make_game()
    game.tie_rule = rule
    game.save(update_fields=["tie_rule"])
    key = make_key(game)
    divisions = [
        {"name": "bronze", "promote": 2, "demote": 0},
        {"name": "silver", "promote": 2, "demote": 1},
        {"name": "gold", "promote": 0, "demote": 2},
    ]
    league = make_league(game, divisions=divisions, cohort_size=5, scoring=scoring)
    players = ["B", "a", "_x", "Z.1", "z-1", "b:2", "A", "m", "N", "n", "c", "C", "d", "D", "e", "E", "f"]
    LeaguePlayer.objects.bulk_create(
        [LeaguePlayer(league=league, player_id=p, division=i % 3, period=0) for i, p in enumerate(players)]
    )
    at = league.starts_at + timedelta(minutes=5)
    send(game, key, {p: (i % 4) * 10 for i, p in enumerate(players)}, at)
    send(game, key, {p: (i % 3) * 10 for i, p in enumerate(players[:9])}, at + timedelta(seconds=1))
    send(game, key, {p: 0 for p in players[4:12]}, at + timedelta(seconds=2))
    send(game, key, {p: 20 for p in players[::2]}, at + timedelta(milliseconds=2400))
    drain()
    revoked = LeagueResult.objects.filter(player_id="c").values_list("event_id", flat=True)
    ScoreEvent.objects.filter(pk__in=list(revoked)[:1]).update(status="revoked")
    Player.objects.filter(game=game, player_id="m").update(hidden=True)
    Player.objects.filter(game=game, player_id="D").update(deleted_at=at)
    # the reference's input: per cohort, per player [score, reached second] from the accepted results
    found: dict = {}
    rows = LeagueResult.objects.filter(league=league, period=1, event__status="accepted").exclude(
        player_id__in=["m", "D"]
    )
    for row in rows.select_related("event").order_by("event__accepted_at", "event_id"):
        reached = max(0, (row.event.accepted_at - league.starts_at) // timedelta(seconds=1))
        held = found.setdefault((row.division, row.number), {}).get(row.player_id)
        points = row.event.points
        if held is None:
            found[(row.division, row.number)][row.player_id] = [points, reached]
        elif scoring == "best":
            if points > held[0]:
                held[:] = [points, reached]
        else:
            held[0] += points
            if points > 0:
                held[1] = reached
    expected = _reference(league, found, rule)
    assert league_period_close(league_id=league.pk, index=1, now=league.starts_at + timedelta(hours=2), chunk=2)
    names = league.division_names
    order = sorted(expected, key=lambda c: (names.index(c.split("-")[1]), int(c.split("-")[2])))
    texts = [e.data for e in Event.objects.filter(type="league.cohort_final").order_by("id")]
    assert [json.loads(t)["cohort"] for t in texts] == order
    assert texts == [json.dumps(expected[c], separators=(",", ":"), ensure_ascii=False) for c in order]
    standings = LeagueStanding.objects.filter(league=league).order_by("cohort__division", "cohort__number", "position")
    lines = [(s.player_id, s.score, s.rank, names[s.division_to]) for s in standings]
    assert lines == [
        (e["player_id"], e["score"], e["rank"], e["division_to"]) for c in order for e in expected[c]["entries"]
    ]
    moved = {e["player_id"]: e["division_to"] for c in order for e in expected[c]["entries"]}
    divisions_now = LeaguePlayer.objects.filter(league=league, player_id__in=list(moved))
    assert {p: names[d] for p, d in divisions_now.values_list("player_id", "division")} == moved
    counts = {f"1-{names[c.division]}-{c.number}": c.players for c in LeagueCohort.objects.filter(league=league)}
    assert counts == {c: len(expected[c]["entries"]) for c in order}
