from django.urls import path

from . import views

urlpatterns = [
    path("games/<str:game>/tournaments/<str:tournament_id>/", views.tournament_board, name="tournament-page"),
]
