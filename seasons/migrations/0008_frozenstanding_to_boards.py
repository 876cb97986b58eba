"""FrozenStanding moves to the boards app (frozen standings are the board index's). The table is
renamed to boards_frozenstanding here and the model leaves this app's state; boards 0004 takes it
into its own state. No row is copied."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("seasons", "0007_dimensions"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterModelTable(name="FrozenStanding", table="boards_frozenstanding"),
            ],
            state_operations=[
                migrations.DeleteModel(name="FrozenStanding"),
            ],
        ),
    ]
