"""ASGI entry point: the hot board reads on their fast path (boards/fastpath.py), the tournament
board reads on theirs (competitions/fastpath.py), the live league cohort reads on theirs
(competitions/league_fastpath.py), single-result
POSTs on theirs (scoring/fastpath.py, in groups), every other HTTP request through Django behind a
per-process admission limit (admission.py), in one hop to a thread (django_handler.py); WebSockets
through each app's routing. In front of all HTTP: the request id and the request metrics
(common/observability.py)."""

import gc
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")
django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application does

from leaderboard_site.django_handler import OneHopHandler  # noqa: E402

django_asgi_app = OneHopHandler()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from boards.fastpath import FastReads  # noqa: E402
from boards.routing import websocket_urlpatterns as board_sockets  # noqa: E402
from common.observability import Observed  # noqa: E402
from competitions.fastpath import FastStandings  # noqa: E402
from competitions.league_fastpath import FastLeagues  # noqa: E402
from competitions.routing import websocket_urlpatterns as tournament_sockets  # noqa: E402
from leaderboard_site.admission import DjangoAdmission  # noqa: E402
from scoring.fastpath import FastSingles  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": Observed(FastReads(FastStandings(FastLeagues(FastSingles(DjangoAdmission(django_asgi_app)))))),
        "websocket": AllowedHostsOriginValidator(URLRouter([*board_sockets, *tournament_sockets])),
    }
)

# Everything loaded so far lives as long as the process: move it out of the collector's way, so
# full collections stay short (measured: 60-140 ms pauses every ~5 s under load without this).
gc.collect()
gc.freeze()
