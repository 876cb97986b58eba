from django.urls import path

from .apis import MatchBatchSubmitApi, MatchResultSubmitApi

urlpatterns = [
    path("games/<str:game>/matches/batch", MatchBatchSubmitApi.as_view(), name="matches-batch"),
    path("games/<str:game>/matches/<str:match_id>/results", MatchResultSubmitApi.as_view(), name="match-results"),
]
