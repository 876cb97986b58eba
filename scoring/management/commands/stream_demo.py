"""Stream demo matches to the running service over signed HTTP, like a match server would.

It logs what became of them every --summary-s seconds (10), not a line per match: under `make run`
(DEMO on) the web leaves out its own line for each of these requests (their ids start with `demo-`,
common.logs.DemoWritesQuiet), so the terminal stays readable. The web not answering is one warning
when it stops (not while it starts) and one line when it answers again."""

import json
import logging
import os
import random
import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand

from anticheat.services import server_key_create
from common.logs import DEMO_REQUEST_ID_PREFIX
from common.signing import signed_headers
from scoring.demo import DemoTally, demo_match, demo_players
from seasons.selectors import game_get

logger = logging.getLogger("scoring.demo")

RETRY_S = 2.0  # between attempts while the web does not answer
START_GRACE_S = 30.0  # the web may take this long to start before the stream says it is waiting


class Command(BaseCommand):
    help = "Submit a demo match every --interval seconds to the service at --url (default http://127.0.0.1:$PORT)."

    def add_arguments(self, parser):
        parser.add_argument("--url", default=f"http://127.0.0.1:{os.environ.get('PORT', '8000')}")
        parser.add_argument("--interval", type=float, default=0.5)
        parser.add_argument("--count", type=int, default=0, help="stop after this many matches (0: forever)")
        parser.add_argument("--summary-s", type=float, default=10.0, help="log a summary this often")

    def handle(self, *args, **options):
        game = game_get(slug="demo")
        if game is None:
            self.stderr.write("no demo game: run `python manage.py seed_demo` first")
            return
        key = server_key_create(game=game, label="stream_demo")
        stream = _Stream(url=options["url"].rstrip("/"), key_id=key.key_id, secret=key.secret)
        players = demo_players(200)
        rng = random.Random()
        tally = DemoTally(since=time.monotonic())
        sent = 0
        while options["count"] == 0 or sent < options["count"]:
            answer = stream.send(demo_match(rng, players, datetime.now(UTC)))
            if answer is None:
                time.sleep(RETRY_S)
            else:
                tally.answered(status=answer[0], body=answer[1])
                sent += 1
            if tally.due(now=time.monotonic(), every_s=options["summary_s"]):
                _summary_log(tally)
            if answer is not None:
                time.sleep(options["interval"])
        _summary_log(tally)


def _summary_log(tally: DemoTally) -> None:
    text = tally.summary(now=time.monotonic())
    if text:
        logger.info(text)


class _Stream:
    """Signed POSTs of single matches, each with a request id of the demo's own; says when the web
    stops and starts answering."""

    def __init__(self, *, url: str, key_id: str, secret: str) -> None:
        self.url, self.key_id, self.secret = url, key_id, secret
        self.started = time.monotonic()
        self.answered_once = False
        self.down_since: float | None = None  # the first failed attempt of an outage
        self.warned = False

    def send(self, match: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        """The answer's status and body, or None when the web could not be reached."""
        path = f"/api/v1/games/demo/matches/{match.pop('match_id')}/results"
        body = json.dumps(match).encode()
        headers = signed_headers(key_id=self.key_id, secret=self.secret, method="POST", path=path, body=body)
        headers["X-Request-ID"] = f"{DEMO_REQUEST_ID_PREFIX}{uuid.uuid4().hex}"
        request = urllib.request.Request(
            self.url + path, data=body, method="POST", headers={"Content-Type": "application/json", **headers}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                answer = response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:  # answered: refused whole (429, 503, ...)
            answer = exc.code, {}
        except (urllib.error.URLError, OSError) as exc:
            self._failed(exc)
            return None
        self._answered()
        return answer

    def _failed(self, exc: Exception) -> None:
        now = time.monotonic()
        if self.down_since is None:
            self.down_since = now
        starting = not self.answered_once and now - self.started < START_GRACE_S
        if not self.warned and not starting:
            what = "not answering" if self.answered_once else f"not answering after {START_GRACE_S:.0f} s"
            logger.warning("demo: the web at %s is %s (%s); retrying every %.0f s", self.url, what, exc, RETRY_S)
            self.warned = True

    def _answered(self) -> None:
        if self.warned and self.down_since is not None:
            logger.info("demo: the web answers again (after %.0f s)", time.monotonic() - self.down_since)
        self.answered_once, self.down_since, self.warned = True, None, False
