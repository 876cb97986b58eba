import json

from django.core.management.base import BaseCommand, CommandError

from anticheat.services import audit, server_key_create
from seasons.selectors import game_get


class Command(BaseCommand):
    help = "Create an HMAC key for a game's match servers; prints {key_id, secret} (the secret is shown once)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--label", default="")

    def handle(self, *args, **options):
        game = game_get(slug=options["slug"])
        if game is None:
            raise CommandError(f"unknown game {options['slug']!r}")
        key = server_key_create(game=game, label=options["label"])
        audit(action="create_key", target=key.key_id, actor_label="manage.py create_server_key", game=game)
        self.stdout.write(json.dumps({"key_id": key.key_id, "secret": key.secret}))
