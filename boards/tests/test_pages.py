"""The board page from its pieces (boards/pages.py): the fast entrance answers it byte for byte as
Django does (and itself, not Django behind it), on every tab, with and without a player; a new
result shows on the next request; a page whose pieces are kept renders no template."""

from datetime import timedelta

import pytest
from django.core.asgi import get_asgi_application
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from boards import pages
from boards.fastpath import HOME_ROUTE, PAGE_ROUTE, FastReads
from boards.services import board_tiers_set, friendship_add
from boards.testing import record
from boards.tiers import tiers_parse
from common.operations import FAST_ANSWERS
from common.testing import asgi_request
from seasons.catalog import catalog_publish
from seasons.testing import make_game

pytestmark = pytest.mark.django_db

DJANGO = get_asgi_application()
FAST = FastReads(DJANGO)


async def _no_django(scope, receive, send):
    raise AssertionError(f"Django was asked for {scope['path']}?{scope.get('query_string', b'').decode()}")


FAST_ONLY = FastReads(_no_django)


def same(query: str = "", *, path: str = "/games/arena/", fast: bool = True) -> str:
    before = FAST_ANSWERS[PAGE_ROUTE]
    answered = asgi_request(FAST_ONLY if fast else FAST, path, query)
    assert FAST_ANSWERS[PAGE_ROUTE] == before + (1 if fast else 0), (query, "answered by the wrong entrance")
    slow = asgi_request(DJANGO, path, query)
    assert (answered.status_code, answered.raw_headers, answered.content) == (
        slow.status_code,
        slow.raw_headers,
        slow.content,
    ), query
    return answered.content.decode() if answered.status_code == 200 else str(answered.status_code)


def seed(game) -> None:
    for i in range(30):
        record(game, f"p{i:02d}", 500 - 7 * (i // 2), region="eu" if i % 2 else "na", name=f"P <{i}>")
    friendship_add(game=game, player_id="p03", friend_id="p11")


def test_every_tab_with_and_without_a_player_is_the_same_from_both_entrances():
    game = make_game(start=timezone.now() - timedelta(days=2))
    seed(game)
    asgi_request(DJANGO, "/games/arena/")  # the first read builds the regions set
    day = timezone.now().date().isoformat()
    for query in ["", "board=weekly", "board=monthly", "board=best", f"board=daily&period={day}", "region=eu"]:
        page = same(query)
        assert 'data-player="p01"' in page
    page = same("player=p03")
    assert '<tr data-player="p03" class="me">' in page and 'id="around-box">' in page and 'id="friends-box">' in page
    assert "P &lt;3&gt;: rank" in page
    page = same("player=nobody&board=weekly")
    assert "nobody: not ranked yet on this board." in page
    page = same("player=%3Cscript%3Ex")  # escaped wherever it shows
    assert "<script>x" not in page and "&lt;script&gt;x" in page and "player=%3Cscript%3Ex" in page
    assert 'data-board="all" href="?board=all&amp;region=global&amp;player=%3Cscript%3Ex"' in page
    same("board=nope")  # a bad board: the season board, by both
    same("period=1999-01-01&board=daily")
    assert same(path="/games/nope/", fast=False) == "404"


def test_a_new_result_shows_on_the_next_page_and_kept_pieces_render_no_template(monkeypatch):
    game = make_game()
    seed(game)
    asgi_request(DJANGO, "/games/arena/")
    assert "p99" not in same()
    record(game, "p99", 10_000, name="Newcomer")
    assert '<tr data-player="p99"><td class="rank">1</td>' in same()
    same("player=p07")  # the chrome of a page with a player is kept too (any player's)

    def no_template(*args, **kwargs):
        raise AssertionError("a template was rendered")

    monkeypatch.setattr(pages, "render_to_string", no_template)
    with CaptureQueriesContext(connection) as queries:
        page = asgi_request(FAST_ONLY, "/games/arena/", "player=p05")
    assert page.status_code == 200 and '<tr data-player="p05" class="me">' in page.content.decode()
    assert len(queries) == 0  # no PostgreSQL either


def test_the_list_of_games_from_the_fast_entrance_until_a_game_changes():
    make_game()
    first = asgi_request(FAST, "/")  # Django renders it, and keeps it at the list's version
    assert first.status_code == 200 and "/games/arena/" in first.content.decode()
    before = FAST_ANSWERS[HOME_ROUTE]
    kept = asgi_request(FAST_ONLY, "/")  # now the fast entrance, no Django behind it
    assert FAST_ANSWERS[HOME_ROUTE] == before + 1
    assert (kept.status_code, kept.raw_headers, kept.content) == (first.status_code, first.raw_headers, first.content)
    make_game(slug="cup")  # a new game: a new version of the list
    with pytest.raises(AssertionError, match="Django was asked for /"):
        asgi_request(FAST_ONLY, "/")  # the kept page is not at the new version
    fresh = asgi_request(FAST, "/")
    assert "/games/cup/" in fresh.content.decode() and ">Cup<" in fresh.content.decode()
    assert asgi_request(FAST_ONLY, "/").content == fresh.content


def test_tier_badges_and_the_players_boards_from_both_entrances():
    game = make_game(start=timezone.now() - timedelta(days=2))
    seed(game)
    asgi_request(DJANGO, "/games/arena/")
    board_tiers_set(
        game=game,
        board="all",
        tiers=tiers_parse({"by": "rank", "tiers": [{"name": "gold", "cutoff": 2}, {"name": "iron"}]}, ascending=False),
    )
    catalog_publish(slug="arena")
    page = same("player=p03")
    assert '<td class="name">P &lt;0&gt; <span class="tier tier-gold">gold</span></td>' in page
    assert '<td class="name">P &lt;3&gt; <span class="tier tier-iron">iron</span></td>' in page
    # The player's boards: every kind with a score, its rank, score and tier (the season board's).
    assert 'id="boards-box"><h2>My boards</h2>' in page
    assert '<a href="?board=all&amp;player=p03">all</a></td><td class="rank">3</td><td class="score">493</td>' in page
    assert '<td class="tier-cell"><span class="tier tier-iron">iron</span></td>' in page
    assert 'href="?board=best&amp;player=p03">best</a>' in page
    page = same("player=nobody")
    assert '<section id="boards-box" hidden></section>' in page
    page = same("board=weekly")  # no tiers on that kind, no player: no badge, no box
    assert "tier-" not in page.split('id="lb-page"')[0]
