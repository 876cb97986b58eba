"""The `moderators` group, with what moderators do in the admin: the review queue (membership is
what scoring/admin.py checks), the audit log, bans, and the seasons (games' schedules, seasons,
the pointer, final standings). Created here so a new deployment only adds people to it; an
existing group keeps its other permissions (these are added, none removed)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

MODERATORS = "moderators"
PERMISSIONS = {
    "anticheat": ["view_auditentry", "view_ban", "add_ban", "change_ban"],
    "seasons": [
        "view_game",
        "change_game",
        "view_season",
        "add_season",
        "change_season",
        "view_seasonpointer",
        "change_seasonpointer",
        "view_seasonpointerchange",
    ],
    "boards": ["view_frozenstanding", "view_seasonstandings"],
    "scoring": ["view_scoreevent"],
}


def grant(apps, schema_editor):
    # Permissions are created after the last migration (post_migrate): on a new database they do
    # not exist yet, so create them now (Django's documented way in a data migration).
    for app_config in apps.get_app_configs():
        kept = getattr(app_config, "models_module", None)  # a historical app has none
        app_config.models_module = kept or True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = kept
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=MODERATORS)
    for app_label, codenames in PERMISSIONS.items():
        found = Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames)
        missing = set(codenames) - {p.codename for p in found}
        if missing:
            raise RuntimeError(f"permissions not found: {app_label} {sorted(missing)}")
        group.permissions.add(*found)


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("anticheat", "0006_matches_per_hour"),
        ("seasons", "0008_frozenstanding_to_boards"),
        ("boards", "0007_frozenstanding_partitioned"),
        ("scoring", "0010_review_queue_resolved_index"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
