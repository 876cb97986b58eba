from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class CompetitionsConfig(AppConfig):
    name = "competitions"
    verbose_name = "Tournaments"

    def ready(self) -> None:
        from boards.events import push_source_add
        from boards.pages import game_links_set
        from boards.slots import whole_slots_source_add

        from .league_boards import cohort_tags_live
        from .league_live import PUSHES as LEAGUE_PUSHES
        from .league_models import League
        from .league_standings import conf_publish_on_save as league_conf_publish_on_save
        from .links import GAME_LINKS, links_refresh_on_change
        from .live import PUSHES, live_refresh_on_save
        from .models import Tournament
        from .open_periods import period_tags_live
        from .standings import conf_publish_on_save

        # The fast entrance's copy of a tournament follows every save of its row.
        post_save.connect(conf_publish_on_save, sender=Tournament, dispatch_uid="tournament_conf_publish")
        post_save.connect(league_conf_publish_on_save, sender=League, dispatch_uid="league_conf_publish")
        # The live publisher (boards/events.py) pushes the changed period boards too; a save (an
        # `end`, a new window) counts as a change of the current period's board.
        push_source_add(PUSHES)
        push_source_add(LEAGUE_PUSHES)  # and the changed league cohort boards
        post_save.connect(live_refresh_on_save, sender=Tournament, dispatch_uid="tournament_live_refresh")
        # The game's page links its tournaments (boards/pages.py), from a document each change rewrites.
        game_links_set(GAME_LINKS)
        post_save.connect(links_refresh_on_change, sender=Tournament, dispatch_uid="tournament_links_save")
        post_delete.connect(links_refresh_on_change, sender=Tournament, dispatch_uid="tournament_links_delete")
        post_save.connect(links_refresh_on_change, sender=League, dispatch_uid="league_links_save")
        post_delete.connect(links_refresh_on_change, sender=League, dispatch_uid="league_links_delete")
        # On a Redis Cluster, the live periods' slots get the game's pause flag and hidden players.
        whole_slots_source_add(period_tags_live)
        whole_slots_source_add(cohort_tags_live)  # and the league cohorts' slots
