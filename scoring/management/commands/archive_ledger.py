import json
from datetime import date
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from scoring.archive import ArchiveError, ledger_archive


class Command(BaseCommand):
    help = (
        "Write every whole month of the ledger before --before to a checked archive file, then drop its "
        "partitions (only months whose seasons are frozen and whose competition periods are final)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--before", required=True, help="a date, YYYY-MM-DD: months ending on or before it")
        parser.add_argument("--to", default=None, help="the folder for the archives (default: LEDGER_ARCHIVE_DIR)")
        parser.add_argument("--dry-run", action="store_true", help="say which months would go, change nothing")

    def handle(self, *args, **options):
        try:
            before = date.fromisoformat(options["before"])
        except ValueError as exc:
            raise CommandError("--before must be a date, YYYY-MM-DD") from exc
        folder = Path(options["to"] or settings.LEDGER_ARCHIVE_DIR)
        try:
            done = ledger_archive(before=before, folder=folder, dry_run=options["dry_run"])
        except ArchiveError as exc:
            raise CommandError(str(exc)) from exc
        for archived in done:
            self.stdout.write(
                json.dumps(
                    {
                        "month": archived.month.strftime("%Y-%m"),
                        "file": str(archived.path),
                        "rows": archived.rows,
                        "bytes": archived.bytes,
                        "dry_run": options["dry_run"],
                    }
                )
            )
        if not done:
            self.stdout.write(json.dumps({"archived": 0, "before": before.isoformat()}))
