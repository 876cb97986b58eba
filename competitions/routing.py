"""WebSocket routes of the tournaments and the league cohorts."""

from django.urls import re_path

from .consumers import LeagueCohortConsumer, TournamentTopConsumer

websocket_urlpatterns = [
    re_path(
        r"^ws/games/(?P<game>[a-z0-9-]{1,40})/tournaments/(?P<tournament_id>[a-z0-9-]{1,40})/?$",
        TournamentTopConsumer.as_asgi(),
    ),
    re_path(
        r"^ws/games/(?P<game>[a-z0-9-]{1,40})/leagues/(?P<league_id>[a-z0-9-]{1,40})/cohorts/"
        r"(?P<cohort_id>[0-9]{1,9}-[a-z0-9-]{1,32}-[0-9]{1,9})/?$",
        LeagueCohortConsumer.as_asgi(),
    ),
]
