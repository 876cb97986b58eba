"""The project package: settings, root URLs, ASGI routing and the Celery app."""

from .celery import app as celery_app

__all__ = ("celery_app",)
