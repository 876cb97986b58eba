"""Player-facing pages: the list of games and a game's board.

The board page arrives rendered: the top 100 rows and, with `?player=`, that player's standing,
the players around them and their friends, plus the navigation (board kinds, the periods before
and after the one shown, the regions) as links. It reads without JavaScript; the page's script
takes over from the same data and keeps it live.
"""

from datetime import datetime
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from seasons.selectors import games_all

from . import selectors
from .kinds import KINDS


def game_list(request: HttpRequest) -> HttpResponse:
    return render(request, "boards/game_list.html", {"games": games_all()})


def _href(**query: str | None) -> str:
    return "?" + urlencode({k: v for k, v in query.items() if v})


def _page_view(game: str, wanted: dict[str, str | None], now: datetime) -> selectors.BoardView:
    """The board the address names; a bad board, region or period: the season board instead."""
    try:
        return selectors.board_view(
            slug=game,
            board=wanted["board"] or "all",
            region=wanted["region"],
            season=None,
            period=wanted["period"],
            now=now,
        )
    except selectors.UnknownGame as exc:
        raise Http404("no such game") from exc
    except (selectors.UnknownBoard, selectors.BadQuery, selectors.UnknownSeason):
        try:
            return selectors.board_view(slug=game, board="all", region=None, season=None, period=None, now=now)
        except selectors.UnknownSeason as exc:
            raise Http404("this game has no season yet") from exc


def _navigation(view: selectors.BoardView, player: str | None) -> tuple[list[dict[str, str]], dict[str, str] | None]:
    """The tabs of the board kinds, and the links to the periods before and after the one shown."""
    region = view.region
    tabs = [
        {"name": k.name, "label": k.label, "href": _href(board=k.name, region=region, player=player)}
        for k in KINDS.values()
    ]
    kind = KINDS[view.board]
    if kind.period is None or view.period is None:
        return tabs, None
    step = kind.period.shift
    periods = {
        "current": view.period,
        "previous": _href(board=kind.name, region=region, period=step(view.period, -1), player=player),
        "next": _href(board=kind.name, region=region, period=step(view.period, 1), player=player),
    }
    return tabs, periods


def game_board(request: HttpRequest, game: str) -> HttpResponse:
    now = timezone.now()
    wanted = {k: request.GET.get(k) or None for k in ("board", "region", "period", "player")}
    view = _page_view(game, wanted, now)
    player = wanted["player"]
    tabs, periods = _navigation(view, player)
    entries = selectors.board_top(view=view, n=100)
    me = around = friends = None
    if player:
        me = selectors.board_player(view=view, player_id=player)
        if me is not None:
            around = selectors.board_around(view=view, player_id=player, r=5)
            friends = selectors.board_friends(view=view, player_id=player)
    page = {
        "game": view.game.slug,
        "board": view.board,
        "region": view.region,
        "period": view.period,
        "periodic": KINDS[view.board].periodic,
        "player": player or "",
        "season": view.season.id,
        "tie_rule": view.game.tie_rule,
        "entries": entries,
    }
    return render(
        request,
        "boards/game_board.html",
        {
            "game": view.game,
            "view": view,
            "tabs": tabs,
            "periods": periods,
            "regions": selectors.game_regions(season=view.season),
            "page": page,
            "entries": entries,
            "me": me,
            "me_top": max(0.1, 100 - me.percentile) if me is not None else None,
            "around": around,
            "friends": friends if friends and len(friends) > 1 else None,
        },
    )
