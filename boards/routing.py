"""WebSocket routes of the boards app."""

from django.urls import re_path

from .consumers import BoardTopConsumer

websocket_urlpatterns = [
    re_path(r"^ws/games/(?P<game>[a-z0-9-]{1,40})/boards/(?P<board>[a-z]+)/?$", BoardTopConsumer.as_asgi()),
]
