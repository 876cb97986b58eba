import json

from django.core.management.base import BaseCommand, CommandError

from common.formats import parse_time
from scoring.moderation import player_ban
from seasons.selectors import game_get


class Command(BaseCommand):
    help = "Ban a player (new results rejected); --revoke-since also revokes their results since then."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("player_id")
        parser.add_argument("--revoke-since", default=None, help="ISO 8601: revoke results played since then")
        parser.add_argument("--reason", default="")

    def handle(self, *args, **options):
        game = game_get(slug=options["slug"])
        if game is None:
            raise CommandError(f"unknown game {options['slug']!r}")
        since = None
        if options["revoke_since"]:
            since = parse_time(options["revoke_since"])
            if since is None:
                raise CommandError("--revoke-since must be ISO 8601 with a zone, e.g. 2026-10-13T00:00:00Z")
        result = player_ban(
            game=game,
            player_id=options["player_id"],
            reason=options["reason"],
            revoke_since=since,
            actor_label="manage.py ban_player",
        )
        self.stdout.write(json.dumps({"player_id": result.player_id, "banned": True, "revoked": result.revoked}))
