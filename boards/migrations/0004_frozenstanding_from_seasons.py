"""FrozenStanding joins the boards app from seasons (seasons 0008 renamed its table): state only,
plus the content type (admin permissions and history follow it). SeasonStandings is a proxy of
Season for the admin's final-standings downloads."""

import django.db.models.deletion
from django.db import migrations, models


def content_type_to_boards(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="seasons", model="frozenstanding").update(app_label="boards")


def content_type_to_seasons(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="boards", model="frozenstanding").update(app_label="seasons")


class Migration(migrations.Migration):
    dependencies = [
        ("boards", "0003_friendships"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("seasons", "0008_frozenstanding_to_boards"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="FrozenStanding",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("board", models.CharField(max_length=16)),
                        ("region", models.CharField(max_length=16)),
                        ("period", models.CharField(max_length=16)),
                        ("position", models.PositiveIntegerField()),
                        ("rank", models.PositiveIntegerField()),
                        ("player_id", models.CharField(max_length=64)),
                        ("score", models.BigIntegerField()),
                        (
                            "season",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="standings",
                                to="seasons.season",
                            ),
                        ),
                    ],
                    options={
                        "indexes": [
                            models.Index(fields=["season", "board", "region", "period", "player_id"], name="standing_player")
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("season", "board", "region", "period", "position"),
                                name="standing_unique_position",
                            )
                        ],
                    },
                ),
            ],
        ),
        migrations.RunPython(content_type_to_boards, content_type_to_seasons),
        migrations.CreateModel(
            name="SeasonStandings",
            fields=[],
            options={"verbose_name": "final standings", "verbose_name_plural": "final standings", "proxy": True},
            bases=("seasons.season",),
        ),
    ]
