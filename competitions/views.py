"""A tournament's page (pages.py builds its data; the template renders it, rows and all)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from common.operations import digits_only
from seasons.selectors import game_get

from . import pages
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
