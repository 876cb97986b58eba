import json

from django.core.management.base import BaseCommand, CommandError

from events.services import webhook_create
from events.types import UnknownType, types_parse
from seasons.selectors import game_get


class Command(BaseCommand):
    help = (
        "Create a webhook: every event of the game (of --types) published from now on is POSTed to URL, "
        "signed with its secret; prints {webhook_id, secret} (the secret is shown once)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("url")
        parser.add_argument("--types", default="", help="comma-separated event types (default: all)")

    def handle(self, *args, **options):
        game = game_get(slug=options["slug"])
        if game is None:
            raise CommandError(f"unknown game {options['slug']!r}")
        try:
            types = types_parse(options["types"]) if options["types"] else []
            webhook = webhook_create(game=game, url=options["url"], types=types)
        except (UnknownType, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps({"webhook_id": webhook.pk, "secret": webhook.secret}))
