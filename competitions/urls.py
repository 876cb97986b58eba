"""The tournament endpoints' URLs, built from their declarations (apis.py)."""

from common.operations import urlpatterns as operation_urls

from .apis import OPERATIONS

urlpatterns = operation_urls(OPERATIONS)
