from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring ledger"

    def ready(self) -> None:
        from competitions.counters import attempts_source_set

        from .entries import attempts_counted

        attempts_source_set(attempts_counted)  # a tournament read that finds its counters lost fills them
