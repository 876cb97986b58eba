"""Player-facing pages: the list of games and a game's board.

The board page arrives rendered: the top 100 rows and, with `?player=`, that player's standing,
the players around them and their friends, plus the navigation (board kinds, the periods before
and after the one shown, the regions) as links. It reads without JavaScript; the page's script
takes over from the same data and keeps it live.
"""

from dataclasses import replace
from datetime import datetime

import redis
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from seasons.catalog import catalog_get, games_version
from seasons.selectors import games_all

from . import lookups, pages, selectors


def game_list(request: HttpRequest) -> HttpResponse:
    """The list of games; kept at the list's version for the fast entrance (pages.home_keep)."""
    try:
        version: str | None = games_version()  # before the games are read
    except redis.RedisError:
        version = None  # not kept: the fast entrance answers nothing it cannot check
    response = render(request, "boards/game_list.html", {"games": games_all()})
    if version is not None:
        pages.home_keep(version, response.content)
    return response


def _player_boards(view: selectors.BoardView, player: str, now: datetime) -> list[selectors.Entry] | None:
    """The player on every board kind of the current season (none for a past season's page)."""
    if view.season.frozen_at is not None:
        return None
    catalog = catalog_get(slug=view.game.slug)
    found = lookups.player_boards(
        views=lookups.current_boards(catalog=catalog, region=view.region, now=now), player_id=player
    )
    return found.boards if found is not None else None


def game_board(request: HttpRequest, game: str) -> HttpResponse:
    """The board page (pages.py builds it; the fast entrance answers it first, fastpath.py)."""
    now = timezone.now()
    wanted = {k: request.GET.get(k) or None for k in ("board", "region", "period", "player")}

    def resolve(board: str, region: str | None, period: str | None) -> selectors.BoardView:
        return selectors.board_view(slug=game, board=board, region=region, season=None, period=period, now=now)

    try:
        view = pages.page_view(wanted, resolve)
    except selectors.UnknownGame as exc:
        raise Http404("no such game") from exc
    except selectors.UnknownSeason as exc:
        raise Http404("this game has no season yet") from exc
    player = wanted["player"]
    top = None if view.frozen else selectors.board_top_cached(view=view, n=pages.TOP_N)
    page = pages.PageData(
        view=view,
        regions=selectors.game_regions(season=view.season),
        entries=top.value if top is not None else selectors.board_top(view=view, n=pages.TOP_N),
        top=top,
        player=player,
        links=pages.links_html(game, now),
    )
    if player:
        me = selectors.board_player(view=view, player_id=player)
        around = selectors.board_around(view=view, player_id=player, r=5) if me is not None else None
        friends = selectors.board_friends(view=view, player_id=player) if me is not None else None
        page = replace(page, me=me, around=around, friends=friends, boards=_player_boards(view, player, now))
    return HttpResponse(pages.page_html(page))
