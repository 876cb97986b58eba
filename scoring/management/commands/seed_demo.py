import json
from datetime import timedelta

from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from anticheat.services import game_rules_set, server_key_create
from scoring.demo import demo_history, demo_players
from scoring.services import matches_submit
from scoring.validation import parse_match_id, validate_match
from seasons.selectors import game_get
from seasons.services import game_create


class Command(BaseCommand):
    help = "Create the demo game `demo` with players and a history of results; prints {game, key_id, secret}."

    def add_arguments(self, parser):
        parser.add_argument("--players", type=int, default=200)
        parser.add_argument("--matches", type=int, default=600)

    def handle(self, *args, **options):
        now = timezone.now()
        game = game_get(slug="demo")
        fresh = game is None
        if game is None:
            game, _ = game_create(slug="demo", name="Demo Arena", season_start=now - timedelta(days=7), season_days=90)
        key = server_key_create(game=game, label="demo")
        if fresh:
            # The history is a backfill: no bucket applies to it. Then the demo stream's pace (a
            # result per player every ~25 s) fits a bucket of 5 refilled every 10 s.
            game_rules_set(game=game, player_burst=0)
            players = demo_players(options["players"])
            history = list(demo_history(players, now, options["matches"], days=6))
            for start in range(0, len(history), 500):
                chunk = history[start : start + 500]
                parsed = []
                for raw in chunk:
                    match_id = parse_match_id(raw["match_id"])
                    assert match_id is not None  # the demo makes UUIDs
                    match, errors = validate_match(
                        raw, match_id=match_id, max_points=game.max_points_per_match, now=now, max_future_s=60
                    )
                    parsed.append((match_id, match, errors))
                with transaction.atomic():
                    matches_submit(game=game, key=key, matches=parsed, now=timezone.now())
            game_rules_set(game=game, player_burst=5, player_refill_s=10)
        self.stdout.write(json.dumps({"game": game.slug, "key_id": key.key_id, "secret": key.secret}))
