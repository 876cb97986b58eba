import json
from dataclasses import asdict

from django.core.management.base import BaseCommand

from scoring.recovery import redis_realign


class Command(BaseCommand):
    help = (
        "After PostgreSQL was restored from a backup (service stopped): drop every Redis key of this deployment "
        "but the metrics, rebuild every game's live boards from the ledger, write the boards marker. One JSON line."
    )

    def handle(self, *args, **options):
        report = redis_realign()
        self.stdout.write(json.dumps(asdict(report), default=str))
