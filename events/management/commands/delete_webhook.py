import json

from django.core.management.base import BaseCommand, CommandError

from events.services import webhook_delete


class Command(BaseCommand):
    help = "Delete a webhook, with its deliveries and their attempts; prints {webhook_id, deleted: true}."

    def add_arguments(self, parser):
        parser.add_argument("webhook_id", type=int)

    def handle(self, *args, **options):
        if not webhook_delete(webhook_id=options["webhook_id"]):
            raise CommandError(f"no webhook {options['webhook_id']}")
        self.stdout.write(json.dumps({"webhook_id": options["webhook_id"], "deleted": True}))
