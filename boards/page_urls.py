from django.urls import path

from . import views

urlpatterns = [
    path("", views.game_list, name="home"),
    path("games/<str:game>/", views.game_board, name="game-board"),
]
