import json

from django.core.management.base import BaseCommand
from django.utils import timezone

from scoring.ledger_partitions import months_ahead, partitions_ahead, partitions_list


class Command(BaseCommand):
    help = "List the ledger's monthly partitions (rows estimated, bytes); --ensure creates those ahead now."

    def add_arguments(self, parser):
        parser.add_argument("--ensure", action="store_true", help="create the months ahead (as beat does hourly)")

    def handle(self, *args, **options):
        now = timezone.now()
        if options["ensure"]:
            created = partitions_ahead(now=now)
            self.stdout.write(json.dumps({"created": [m.strftime("%Y-%m") for m in created]}))
        for p in partitions_list():
            self.stdout.write(
                json.dumps({"table": p.table, "partition": p.name, "rows": p.rows_estimate, "bytes": p.bytes})
            )
        self.stdout.write(json.dumps({"months_ahead": months_ahead(now=now)}))
