from django.apps import AppConfig
from django.db.models.signals import post_save


class CompetitionsConfig(AppConfig):
    name = "competitions"
    verbose_name = "Tournaments"

    def ready(self) -> None:
        from .models import Tournament
        from .standings import conf_publish_on_save

        # The fast entrance's copy of a tournament follows every save of its row.
        post_save.connect(conf_publish_on_save, sender=Tournament, dispatch_uid="tournament_conf_publish")
