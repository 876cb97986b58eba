from django.urls import path

from . import views

urlpatterns = [
    path("games/<str:game>/tournaments/<str:tournament_id>/", views.tournament_board, name="tournament-page"),
    path("games/<str:game>/leagues/<str:league_id>/", views.league_page, name="league-page"),
]
