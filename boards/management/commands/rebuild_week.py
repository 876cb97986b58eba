import json

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from boards.windows import week_rebuild
from seasons.periods import WEEK, BadPeriod
from seasons.selectors import game_get, season_current, seasons_of


class Command(BaseCommand):
    help = "Re-derive a weekly board from its daily boards; prints {week, boards, members, differences, swapped}."

    def add_arguments(self, parser):
        parser.add_argument("game")
        parser.add_argument("week", help="ISO week, e.g. 2026-W42")
        parser.add_argument("--season", type=int, default=None, help="season id (default: the current one)")
        parser.add_argument("--check", action="store_true", help="compare with the live week only; change nothing")

    def handle(self, *args, **options):
        game = game_get(slug=options["game"])
        if game is None:
            raise CommandError(f"unknown game {options['game']!r}")
        try:
            WEEK.check(options["week"])
        except BadPeriod as exc:
            raise CommandError(str(exc)) from exc
        seasons = seasons_of(game=game)
        if options["season"] is not None:
            season = next((s for s in seasons if s.id == options["season"]), None)
        else:
            season = season_current(game=game, now=timezone.now(), seasons=seasons)
        if season is None:
            raise CommandError("no such season")
        if season.board_shards > 1:
            # Its day boards are split by player: `rebuild_boards --board weekly` re-derives the
            # week from the ledger instead.
            raise CommandError("this season's boards are split by player: use rebuild_boards --board weekly")
        report = week_rebuild(season=season, week=options["week"], swap=not options["check"])
        self.stdout.write(json.dumps(report.__dict__))
