"""WebSocket routes of the tournaments."""

from django.urls import re_path

from .consumers import TournamentTopConsumer

websocket_urlpatterns = [
    re_path(
        r"^ws/games/(?P<game>[a-z0-9-]{1,40})/tournaments/(?P<tournament_id>[a-z0-9-]{1,40})/?$",
        TournamentTopConsumer.as_asgi(),
    ),
]
