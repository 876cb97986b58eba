import json

from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError
from django.utils import timezone

from common.formats import parse_time
from seasons.models import MAX_BOARD_SHARDS, TieRule
from seasons.services import DEFAULT_SEASON_DAYS, game_create


class Command(BaseCommand):
    help = "Create a game and its first season; prints {game, season}."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)
        parser.add_argument("--tie-rule", choices=TieRule.values, default=TieRule.COMPETITION)
        parser.add_argument("--max-points-per-match", type=int, default=10_000)
        parser.add_argument("--season-start", default=None, help="ISO 8601 (default now; a past start is allowed)")
        parser.add_argument("--season-days", type=float, default=DEFAULT_SEASON_DAYS)
        parser.add_argument("--ascending", action="store_true", help="lower values win (times, strokes)")
        parser.add_argument(
            "--board-shards",
            type=int,
            default=1,
            help=f"split every board by player across N sorted sets (1-{MAX_BOARD_SHARDS}; default 1; "
            "a later change applies from the next season)",
        )

    def handle(self, *args, **options):
        # "Now", to the minute: a result a match server timed a few seconds before the game was
        # created still falls in the first season.
        start = timezone.now().replace(second=0, microsecond=0)
        if options["season_start"]:
            parsed = parse_time(options["season_start"])
            if parsed is None and len(options["season_start"]) == 10:  # a date: its midnight UTC
                parsed = parse_time(options["season_start"] + "T00:00:00Z")
            if parsed is None:
                raise CommandError("--season-start must be ISO 8601 with a zone, e.g. 2026-10-01T00:00:00Z")
            start = parsed
        try:
            game, season = game_create(
                slug=options["slug"],
                name=options["name"],
                tie_rule=options["tie_rule"],
                max_points_per_match=options["max_points_per_match"],
                ascending=options["ascending"],
                season_start=start,
                season_days=options["season_days"],
                board_shards=options["board_shards"],
            )
        except IntegrityError as exc:
            raise CommandError(f"game {options['slug']!r} already exists") from exc
        except Exception as exc:  # validation errors from full_clean / ValueError
            if exc.__class__.__name__ in {"ValidationError", "ValueError"}:
                raise CommandError(str(exc)) from exc
            raise
        self.stdout.write(json.dumps({"game": game.slug, "season": season.id}))
