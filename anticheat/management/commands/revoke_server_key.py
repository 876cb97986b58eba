import json

from django.core.management.base import BaseCommand, CommandError

from anticheat.models import ServerKey
from anticheat.services import audit, server_key_revoke


class Command(BaseCommand):
    help = "Revoke a server key: it stops working at once (401). Prints {key_id, revoked}."

    def add_arguments(self, parser):
        parser.add_argument("key_id")

    def handle(self, *args, **options):
        try:
            key = server_key_revoke(key_id=options["key_id"])
        except ServerKey.DoesNotExist as exc:
            raise CommandError(f"unknown key {options['key_id']!r}") from exc
        audit(action="revoke_key", target=key.key_id, actor_label="manage.py revoke_server_key", game=key.game)
        self.stdout.write(json.dumps({"key_id": key.key_id, "revoked": True}))
