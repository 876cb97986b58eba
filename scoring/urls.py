from django.urls import path

from . import apis

urlpatterns = [
    path("games/<str:game>/matches/batch", apis.MatchBatchSubmitApi.as_view(), name="matches-batch"),
    path("games/<str:game>/matches/<str:match_id>/results", apis.MatchResultSubmitApi.as_view(), name="match-results"),
    path("games/<str:game>/players/<str:player_id>", apis.PlayerApi.as_view(), name="player"),
    path("games/<str:game>/players/<str:player_id>/rank", apis.PlayerRankApi.as_view(), name="player-rank"),
    path(
        "games/<str:game>/players/<str:player_id>/friends/<str:friend_id>",
        apis.FriendshipApi.as_view(),
        name="friendship",
    ),
]
