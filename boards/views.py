"""Player-facing pages: the list of games and a game's board."""

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from seasons.models import Game
from seasons.selectors import game_get


def game_list(request: HttpRequest) -> HttpResponse:
    return render(request, "boards/game_list.html", {"games": Game.objects.all()})


def game_board(request: HttpRequest, game: str) -> HttpResponse:
    game_obj = game_get(slug=game)
    if game_obj is None:
        raise Http404("no such game")
    return render(request, "boards/game_board.html", {"game": game_obj})
