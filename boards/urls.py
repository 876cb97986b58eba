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
    path("games/<str:game>/players/<str:player_id>", apis.PlayerApi.as_view(), name="player"),
    path("games/<str:game>/players/<str:player_id>/rank", apis.PlayerRankApi.as_view(), name="player-rank"),
    path(
        "games/<str:game>/players/<str:player_id>/friends/<str:friend_id>",
        apis.FriendshipApi.as_view(),
        name="friendship",
    ),
    path(
        "games/<str:game>/boards/<str:board>/players/<str:player_id>/around",
        apis.BoardAroundApi.as_view(),
        name="board-around",
    ),
]
