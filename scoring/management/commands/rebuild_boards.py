import json

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from boards.kinds import BOARD_NAMES
from scoring.rebuild import boards_rebuild
from seasons.selectors import game_get


class Command(BaseCommand):
    help = "Rebuild the live boards of a game from the ledger into fresh keys and swap them in."

    def add_arguments(self, parser):
        parser.add_argument("game")
        parser.add_argument(
            "--board",
            action="append",
            choices=BOARD_NAMES,
            metavar="KIND",
            help=f"rebuild only the boards of this kind ({', '.join(BOARD_NAMES)}); repeat for more (default: all)",
        )
        parser.add_argument(
            "--shard",
            type=int,
            metavar="K",
            help="rebuild only shard K (0-based) of the seasons whose boards are split by player (board_shards > K)",
        )
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def handle(self, *args, **options):
        game = game_get(slug=options["game"])
        if game is None:
            raise CommandError(f"unknown game {options['game']!r}")
        bar = tqdm(unit="member", desc=f"rebuild {game.slug}", disable=options["quiet"], file=self.stderr._out)
        if options["shard"] is not None and options["shard"] < 0:
            raise CommandError("--shard is 0 or more")
        report = boards_rebuild(game=game, kinds=options["board"], shard=options["shard"], progress=bar.update)
        bar.close()
        self.stdout.write(json.dumps({"game": game.slug, **report.__dict__}))
