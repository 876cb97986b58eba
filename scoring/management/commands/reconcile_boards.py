import json

from django.core.management.base import BaseCommand, CommandError

from scoring.reconcile import SAMPLE, boards_reconcile
from scoring.unreflected import unreflected_check
from seasons.selectors import game_get, games_all


class Command(BaseCommand):
    help = (
        "Compare the dedup markers of the results applied since the last run with the ledger, then the live "
        "boards (a sample of players, or --full), and repair what differs; one JSON line for the markers "
        "(unreflected results), then one per game with the drift found."
    )

    def add_arguments(self, parser):
        parser.add_argument("games", nargs="*", metavar="GAME", help="games to compare (default: every game)")
        parser.add_argument("--full", action="store_true", help="every board member, not a sample")
        parser.add_argument("--sample", type=int, default=SAMPLE, help=f"players per game (default {SAMPLE})")
        parser.add_argument("--dry-run", action="store_true", help="report the drift, repair nothing")

    def handle(self, *args, **options):
        games = []
        for slug in options["games"]:
            game = game_get(slug=slug)
            if game is None:
                raise CommandError(f"unknown game {slug!r}")
            games.append(game)
        unreflected = unreflected_check(repair=not options["dry_run"])
        self.stdout.write(json.dumps({"unreflected": unreflected.__dict__}))
        for game in games or games_all():
            report = boards_reconcile(
                game=game, full=options["full"], sample=options["sample"], repair=not options["dry_run"]
            )
            self.stdout.write(json.dumps(report.__dict__))
