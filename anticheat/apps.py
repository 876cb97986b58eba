from django.apps import AppConfig


class AnticheatConfig(AppConfig):
    name = "anticheat"
    verbose_name = "Anti-cheat and moderation"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from .models import GameRules
        from .services import rules_forget_local

        # A change saved in this process is in force at once here (every process: within a second).
        post_save.connect(lambda **_: rules_forget_local(), sender=GameRules, weak=False)
        post_delete.connect(lambda **_: rules_forget_local(), sender=GameRules, weak=False)
