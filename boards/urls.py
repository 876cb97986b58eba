from django.urls import path

from . import apis

urlpatterns = [
    path("games/<str:game>", apis.GameDetailApi.as_view(), name="game-detail"),
    path("games/<str:game>/seasons", apis.GameSeasonsApi.as_view(), name="game-seasons"),
    path("games/<str:game>/boards/<str:board>/top", apis.BoardTopApi.as_view(), name="board-top"),
    path(
        "games/<str:game>/boards/<str:board>/distribution",
        apis.BoardDistributionApi.as_view(),
        name="board-distribution",
    ),
    path(
        "games/<str:game>/boards/<str:board>/players/<str:player_id>",
        apis.BoardPlayerApi.as_view(),
        name="board-player",
    ),
    path(
        "games/<str:game>/boards/<str:board>/players/<str:player_id>/friends",
        apis.BoardFriendsApi.as_view(),
        name="board-friends",
    ),
    path(
        "games/<str:game>/boards/<str:board>/players/<str:player_id>/around",
        apis.BoardAroundApi.as_view(),
        name="board-around",
    ),
]
