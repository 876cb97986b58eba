"""The hidden and deleted players of a game, in an index of their own (partial): every frozen read
looks them up (boards/gone.py). Built concurrently: the players table takes writes meanwhile."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("boards", "0008_standing_player_first"),
        ("seasons", "0009_board_shards"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="player",
            index=models.Index(
                condition=models.Q(("hidden", True), ("deleted_at__isnull", False), _connector="OR"),
                fields=["game", "player_id"],
                name="player_hidden",
            ),
        ),
    ]
