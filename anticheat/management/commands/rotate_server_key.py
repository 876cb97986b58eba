import json

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from anticheat.models import ServerKey
from anticheat.services import audit, server_key_rotate


class Command(BaseCommand):
    help = "Rotate a server key: a new key now, the old one retired after --overlap-s. Prints the new key."

    def add_arguments(self, parser):
        parser.add_argument("key_id")
        parser.add_argument("--overlap-s", type=int, default=86400, help="how long both keys work (default 1 day)")

    def handle(self, *args, **options):
        try:
            new = server_key_rotate(key_id=options["key_id"], overlap_s=options["overlap_s"], now=timezone.now())
        except ServerKey.DoesNotExist as exc:
            raise CommandError(f"unknown or revoked key {options['key_id']!r}") from exc
        audit(
            action="rotate_key",
            target=options["key_id"],
            actor_label="manage.py rotate_server_key",
            game=new.game,
            reason=f"new key {new.key_id}, overlap {options['overlap_s']} s",
        )
        self.stdout.write(json.dumps({"key_id": new.key_id, "secret": new.secret, "retires": options["key_id"]}))
