"""A tournament's page (competitions/pages.py) rendered on the server: the period's board, the
title, the period and its status, the time left; and the game's page linking its active and
upcoming tournaments from both entrances (competitions/links.py, boards/pages.py `GameLinks`)."""

import re
from datetime import timedelta

import pytest
from django.core.asgi import get_asgi_application
from django.utils import timezone

from boards.fastpath import PAGE_ROUTE, FastReads
from common.operations import FAST_ANSWERS
from common.redis import client as redis_client
from common.testing import asgi_request
from competitions import keys
from competitions.models import Tournament
from competitions.pages import duration_text
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db

DJANGO = get_asgi_application()
PAGE = "/games/arena/tournaments/cup/"
REWARDS = [{"rank_from": 1, "rank_to": 1, "reward": {"gems": 500}}, {"rank_from": 2, "rank_to": 2, "reward": [1]}]


async def _no_django(scope, receive, send):
    raise AssertionError(f"Django was asked for {scope['path']}")


def tournament(game, slug="cup", *, start_in=timedelta(minutes=-10), **config) -> Tournament:
    start = timezone.now().replace(microsecond=0) + start_in
    values = {"title": "Cup", "starts_at": start, "duration_s": 7200, "ends_at": start + timedelta(hours=2)}
    values.update(config)
    return Tournament.objects.create(game=game, slug=slug, created_at=timezone.now() - timedelta(hours=1), **values)


def play(game, key, player: str, points: int, name: str | None = None) -> None:
    result = {"player_id": player, "points": points, **({"display_name": name} if name else {})}
    submit_direct(game, key, match_body([result], tournaments=["cup"]), now=timezone.now())


def time_left(html: str) -> str:
    return re.search(r'<p id="time-left"[^>]*>([^<]*)</p>', html).group(1)


def test_the_page_renders_the_board_the_period_and_the_time_left(client):
    game = make_game()
    key = make_key(game)
    tournament(game, title="Spring <Cup>", description="Three tries.\nBest counts.", rewards=REWARDS, max_attempts=3)
    play(game, key, "maya", 50, "Maya")
    play(game, key, "maya", 20)
    play(game, key, "leo", 30, "<Leo>")
    drain()
    page = client.get(PAGE)
    html = page.content.decode()
    assert page.status_code == 200
    assert '<h1 id="title">Spring &lt;Cup&gt;</h1>' in html and "<p>Three tries.<br>Best counts.</p>" in html
    assert re.search(
        r'<tr data-player="maya"><td class="rank">1</td><td class="name">Maya</td><td class="score">50</td>'
        r'<td class="attempts">2</td><td class="reward">gems 500</td></tr>\s*'
        r'<tr data-player="leo"><td class="rank">2</td><td class="name">&lt;Leo&gt;</td><td class="score">30</td>'
        r'<td class="attempts">1</td><td class="reward">\[1\]</td></tr>',
        html,
    )
    assert 'id="empty" class="empty" hidden' in html
    assert '<span id="period-label">Period 1</span>' in html and 'class="badge active">active</span>' in html
    assert 'id="prev"' not in html and 'id="next"' not in html  # one period
    assert re.fullmatch(r"1 h (4[89]|50) min left", time_left(html)), time_left(html)  # ends in ~1 h 50 min
    assert '"entries":[{"rank":1,"player_id":"maya"' in html  # the script's data, the same rows


def test_upcoming_grace_periods_and_their_navigation():
    game = make_game()
    # Hourly: the active one, the one before it in grace for 2 h, the next upcoming.
    start = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
    tournament(game, start_in=start - timezone.now(), reset="0 * * * *", duration_s=3600, grace_s=7200, ends_at=None)
    current = asgi_request(DJANGO, PAGE).content.decode()
    assert '<span id="period-label">Period 3</span>' in current and 'href="?period=2"' in current
    assert 'href="?period=4"' in current and re.fullmatch(r"\d+ min \d\d s left|\d+ s left", time_left(current))
    before = asgi_request(DJANGO, PAGE, "period=2").content.decode()
    assert 'class="badge grace">grace</span>' in before
    assert time_left(before).startswith("Ended; results played in time still count for 1 h ")
    after = asgi_request(DJANGO, PAGE, "period=4").content.decode()
    assert 'class="badge upcoming">upcoming</span>' in after and time_left(after).startswith("Starts in ")
    assert 'id="next"' not in after  # nothing after the next one is known
    assert "No results yet in this period." in after
    not_one = asgi_request(DJANGO, PAGE, "period=abc").content.decode()
    assert '<span id="period-label">Period 3</span>' in not_one  # not a period: the current one


def test_an_unknown_tournament_or_period_is_a_404_page():
    game = make_game()
    tournament(game)
    for path, query, says in [
        ("/games/arena/tournaments/nope/", "", "There is no such tournament in Arena"),
        ("/games/nope/tournaments/cup/", "", "There is no such tournament."),
        (PAGE, "period=2", "This tournament has no such period."),
    ]:
        answer = asgi_request(DJANGO, path, query)
        assert answer.status_code == 404 and says in answer.content.decode(), (path, query)


def test_the_game_page_links_its_active_then_upcoming_tournaments_from_both_entrances():
    game = make_game()
    tournament(game, "later", title="Later Cup", start_in=timedelta(hours=3))
    tournament(game, "cup", title="Cup <1>")
    tournament(game, "old", title="Old Cup", start_in=timedelta(hours=-5))  # ended 3 h ago
    django = asgi_request(DJANGO, "/games/arena/").content.decode()  # writes the links' document
    links = re.search(r'<nav id="tournaments".*?</nav>', django).group(0)
    assert re.findall(r'<a href="([^"]+)">([^<]+)</a>', links) == [
        ("/games/arena/tournaments/cup/", "Cup &lt;1&gt;"),
        ("/games/arena/tournaments/later/", "Later Cup"),
    ]
    assert "active, ends" in links and "upcoming, starts" in links
    before = FAST_ANSWERS[PAGE_ROUTE]
    fast = asgi_request(FastReads(_no_django), "/games/arena/")  # the fast entrance, nothing behind it
    assert FAST_ANSWERS[PAGE_ROUTE] == before + 1
    assert fast.content.decode() == django

    # Without the document (expired, or Redis flushed) the fast entrance hands the page to Django.
    redis_client().delete(keys.links_key("arena"))
    with pytest.raises(AssertionError, match="Django was asked"):
        asgi_request(FastReads(_no_django), "/games/arena/")


def test_a_saved_tournament_shows_on_the_game_page_once_committed(django_capture_on_commit_callbacks):
    game = make_game()
    asgi_request(DJANGO, "/games/arena/")
    assert 'id="tournaments"' not in asgi_request(FastReads(_no_django), "/games/arena/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        tournament(game, title="Fresh Cup")
    assert "Fresh Cup" in asgi_request(FastReads(_no_django), "/games/arena/").content.decode()


def test_duration_text_keeps_the_two_largest_units():
    assert [duration_text(s) for s in (0, 9, 69, 3600 + 5 * 60 + 9, 2 * 86400 + 3 * 3600 + 7)] == [
        "0 s",
        "9 s",
        "1 min 09 s",
        "1 h 05 min",
        "2 d 3 h",
    ]
