"""A tournament's page (pages.py builds its data; the template renders it, rows and all) and a
league's page for one player (league_pages.py)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from common.formats import PLAYER_ID_RE
from common.operations import digits_only
from seasons.selectors import game_get

from . import league_pages, pages
from .league_selectors import league_get
from .selectors import tournament_get
from .standings import UnknownPeriod


def tournament_board(request: HttpRequest, game: str, tournament_id: str) -> HttpResponse:
    """The period's board with the time left; `?period=K` names a period (not an integer: the
    current one). An unknown game, tournament or period is a 404 page."""
    found = game_get(slug=game)
    tournament = (
        tournament_get(game=found, slug=tournament_id) if found is not None and len(tournament_id) <= 40 else None
    )
    if tournament is None:
        return render(request, "competitions/missing.html", {"game": found, "what": "tournament"}, status=404)
    asked = request.GET.get("period") or ""
    index = int(asked) if digits_only(asked) and len(asked) <= 9 else None
    try:
        page = pages.tournament_page(tournament=tournament, index=index, now=timezone.now())
    except UnknownPeriod:
        return render(request, "competitions/missing.html", {"game": found, "what": "period"}, status=404)
    return render(request, "competitions/tournament.html", {"game": tournament.game, "page": page})


def league_page(request: HttpRequest, game: str, league_id: str) -> HttpResponse:
    """The player's cohort with its zones and the time left (`?player=`; without it, a form that
    asks for one). An unknown game or league is a 404 page; a player id that is none, a 400."""
    found = game_get(slug=game)
    league = league_get(game=found, slug=league_id) if found is not None else None
    if league is None:
        return render(request, "competitions/missing.html", {"game": found, "what": "league"}, status=404)
    player_id = request.GET.get("player") or ""
    context = {"game": league.game, "league": league, "player_id": player_id, "page": None}
    if not player_id:
        return render(request, "competitions/league.html", context)
    if not PLAYER_ID_RE.match(player_id):
        return render(request, "competitions/missing.html", {"game": found, "what": "player"}, status=400)
    context["page"] = league_pages.league_page(league=league, player_id=player_id, now=timezone.now())
    return render(request, "competitions/league.html", context)
