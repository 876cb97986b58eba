"""WebSocket routes of the boards app (the live consumer arrives with the live-board issue)."""

websocket_urlpatterns: list = []
