import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from boards.exports import standings_csv, standings_json
from boards.standings import standings_count
from seasons.selectors import season_get


class Command(BaseCommand):
    help = "Write a frozen season's standings as CSV and JSON files; prints {season, csv, json, rows}."

    def add_arguments(self, parser):
        parser.add_argument("season", type=int)
        parser.add_argument("--dir", default="var/exports")

    def handle(self, *args, **options):
        season = season_get(season_id=options["season"])
        if season is None:
            raise CommandError(f"unknown season {options['season']}")
        if season.frozen_at is None:
            raise CommandError(f"season {season.id} is not frozen yet (end it, or wait for its grace to end)")
        folder = Path(options["dir"])
        folder.mkdir(parents=True, exist_ok=True)
        stem = folder / f"{season.game.slug}-season-{season.id}"
        csv_path, json_path = stem.with_suffix(".csv"), stem.with_suffix(".json")
        with csv_path.open("w", newline="") as out:
            for chunk in standings_csv(season):
                out.write(chunk)
        with json_path.open("w") as out:
            for chunk in standings_json(season):
                out.write(chunk)
        rows = standings_count(season=season)
        self.stdout.write(json.dumps({"season": season.id, "csv": str(csv_path), "json": str(json_path), "rows": rows}))
