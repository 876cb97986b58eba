from django.apps import AppConfig
from django.db.models.signals import post_save


class CompetitionsConfig(AppConfig):
    name = "competitions"
    verbose_name = "Tournaments"

    def ready(self) -> None:
        from boards.slots import whole_slots_source_add

        from .live import period_tags_live
        from .models import Tournament
        from .standings import conf_publish_on_save

        # The fast entrance's copy of a tournament follows every save of its row.
        post_save.connect(conf_publish_on_save, sender=Tournament, dispatch_uid="tournament_conf_publish")
        # On a Redis Cluster, the live periods' slots get the game's pause flag and hidden players.
        whole_slots_source_add(period_tags_live)
