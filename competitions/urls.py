"""The tournament and league endpoints' URLs, built from their declarations (apis.py, league_apis.py)."""

from common.operations import urlpatterns as operation_urls

from .apis import OPERATIONS
from .league_apis import LEAGUE_OPERATIONS

urlpatterns = operation_urls([*OPERATIONS, *LEAGUE_OPERATIONS])
