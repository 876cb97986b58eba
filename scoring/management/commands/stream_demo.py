"""Stream demo matches to the running service over signed HTTP, like a match server would."""

import json
import os
import random
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime

from django.core.management.base import BaseCommand

from anticheat.services import server_key_create
from common.signing import signed_headers
from scoring.demo import demo_match, demo_players
from seasons.selectors import game_get


class Command(BaseCommand):
    help = "Submit a demo match every --interval seconds to the service at --url (default http://127.0.0.1:$PORT)."

    def add_arguments(self, parser):
        parser.add_argument("--url", default=f"http://127.0.0.1:{os.environ.get('PORT', '8000')}")
        parser.add_argument("--interval", type=float, default=0.5)
        parser.add_argument("--count", type=int, default=0, help="stop after this many matches (0: forever)")

    def handle(self, *args, **options):
        game = game_get(slug="demo")
        if game is None:
            self.stderr.write("no demo game: run `python manage.py seed_demo` first")
            return
        key = server_key_create(game=game, label="stream_demo")
        players = demo_players(200)
        rng = random.Random()
        sent = 0
        while options["count"] == 0 or sent < options["count"]:
            match = demo_match(rng, players, datetime.now(UTC))
            match_id = match.pop("match_id")
            path = f"/api/v1/games/demo/matches/{match_id}/results"
            body = json.dumps(match).encode()
            headers = signed_headers(key_id=key.key_id, secret=key.secret, method="POST", path=path, body=body)
            request = urllib.request.Request(
                options["url"].rstrip("/") + path,
                data=body,
                method="POST",
                headers={"Content-Type": "application/json", **headers},
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    response.read()
            except (urllib.error.URLError, OSError) as exc:
                self.stderr.write(f"stream_demo: {exc}; retrying")
                time.sleep(2)
                continue
            sent += 1
            time.sleep(options["interval"])
