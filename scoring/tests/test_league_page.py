"""A league's page for one player (competitions/league_pages.py): their cohort's rows with zones and
the lines between them, their division, the distance to the promotion line and the time left, in
the HTML before any script runs; the game's page links the league."""

import re

import pytest
from django.utils import timezone

from competitions.league_periods import league_period_shown
from competitions.testing import make_league
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db

PAGE = "/games/arena/leagues/weekly/"
DIVISIONS = [
    {"name": "bronze", "promote": 2, "demote": 0},
    {"name": "silver", "promote": 2, "demote": 2},
    {"name": "gold", "promote": 0, "demote": 2},
]


def play(game, key, points):
    results = [{"player_id": p, "points": n, "display_name": p.title()} for p, n in points.items()]
    submit_direct(game, key, match_body(results), now=timezone.now())
    drain()


def rows(html: str) -> list[tuple[str, str, str]]:
    """(player, classes, zone cell) of each row of the cohort's table."""
    found = re.findall(r'<tr data-player="([^"]+)" class="([^"]*)">.*?<td class="zone">([a-z]+)</td>', html)
    return [(player, " ".join(classes.split()), zone) for player, classes, zone in found]


def test_the_page_shows_the_cohort_with_zones_lines_the_gap_and_the_time_left(client):
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=5, divisions=DIVISIONS)
    from competitions.league_models import LeaguePlayer

    for p in ("a", "b", "c", "d", "e"):
        LeaguePlayer.objects.create(league=league, player_id=p, division=1, period=1)
    play(game, key, {"a": 50, "b": 40, "c": 30, "d": 20, "e": 10})
    page = client.get(PAGE, {"player": "c"})
    assert page.status_code == 200
    html = page.content.decode()
    # 5 of 5 in silver: 2 up, 2 down; the lines under the last promoted and over the first demoted.
    assert rows(html) == [
        ("a", "promote", "promote"),
        ("b", "promote promote-line", "promote"),
        ("c", "stay me", "stay"),
        ("d", "demote demote-line", "demote"),
        ("e", "demote", "demote"),
    ]
    assert "Division <strong>silver</strong>" in html
    assert '<p id="standing" class="standing">11 points to the promotion line.</p>' in html  # 40 - 30 + 1
    left = re.search(r'<p id="time-left"[^>]*>([^<]*)</p>', html).group(1)
    assert re.fullmatch(r"(\d+ min \d\d s|\d+ s) left", left), left  # the hourly period ends within the hour
    period = league_period_shown(league, timezone.now())
    assert f'<h2 id="cohort-id">Cohort {period.index}-silver-1</h2>' in html
    assert "competitions/league.js" in html

    top = client.get(PAGE, {"player": "a"}).content.decode()
    assert '<p id="standing" class="standing">In the promotion zone.</p>' in top


def test_a_player_without_a_result_an_unknown_league_and_the_game_page_link(client):
    game = make_game()
    make_league(game, divisions=DIVISIONS)
    stranger = client.get(PAGE, {"player": "stranger"}).content.decode()
    assert "Division <strong>bronze</strong>" in stranger
    assert "No result this period yet: a first result puts you in a bronze cohort." in stranger
    assert 'id="board"' not in stranger
    asking = client.get(PAGE)
    assert asking.status_code == 200 and '<input name="player"' in asking.content.decode()
    assert client.get("/games/arena/leagues/nope/", {"player": "x"}).status_code == 404
    assert client.get(PAGE, {"player": "bad!id"}).status_code == 400
    assert 'href="/games/arena/leagues/weekly/">Weekly</a>' in client.get("/games/arena/").content.decode()
