import json

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from scoring.rebuild import boards_rebuild
from seasons.selectors import game_get


class Command(BaseCommand):
    help = "Rebuild every live board of a game from the ledger into fresh keys and swap them in."

    def add_arguments(self, parser):
        parser.add_argument("game")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def handle(self, *args, **options):
        game = game_get(slug=options["game"])
        if game is None:
            raise CommandError(f"unknown game {options['game']!r}")
        bar = tqdm(unit="member", desc=f"rebuild {game.slug}", disable=options["quiet"], file=self.stderr._out)
        report = boards_rebuild(game=game, progress=bar.update, on_total=lambda n: setattr(bar, "total", n))
        bar.close()
        self.stdout.write(json.dumps({"game": game.slug, **report.__dict__}))
