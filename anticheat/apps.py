from django.apps import AppConfig


class AnticheatConfig(AppConfig):
    name = "anticheat"
    verbose_name = "Anti-cheat and moderation"
