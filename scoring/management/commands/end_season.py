import json

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from scoring.freezing import season_freeze
from seasons.selectors import game_get
from seasons.services import season_end


class Command(BaseCommand):
    help = "End a game's current season now; prints {season, status, next}."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--grace-s", type=int, default=None, help="grace window in seconds (default: the season's)")
        parser.add_argument("--no-next", action="store_true", help="do not start a new season")

    def handle(self, *args, **options):
        game = game_get(slug=options["slug"])
        if game is None:
            raise CommandError(f"unknown game {options['slug']!r}")
        try:
            ended = season_end(
                game=game, now=timezone.now(), grace_s=options["grace_s"], start_next=not options["no_next"]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        status = ended.status
        if ended.season.grace_s == 0:  # docs/api.md: with --grace-s 0, frozen before the command returns
            season_freeze(season_id=ended.season.id, now=timezone.now())
            status = "frozen"
        self.stdout.write(
            json.dumps(
                {
                    "season": ended.season.id,
                    "status": status,
                    "next": ended.next_season.id if ended.next_season else None,
                }
            )
        )
