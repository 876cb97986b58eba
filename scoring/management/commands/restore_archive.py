import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from scoring.archive import ArchiveError, archive_check, archive_restore


class Command(BaseCommand):
    help = "Check a ledger archive (ledger-YYYY-MM.tar) and load its month back into the ledger's partitions."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--check-only", action="store_true", help="verify the checksums, load nothing")

    def handle(self, *args, **options):
        path = Path(options["file"])
        try:
            if options["check_only"]:
                self.stdout.write(json.dumps({"file": str(path), "rows": archive_check(path), "ok": True}))
                return
            month, rows = archive_restore(path)
        except ArchiveError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps({"file": str(path), "month": month.strftime("%Y-%m"), "rows": rows}))
