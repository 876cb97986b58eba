"""The tournaments in the admin: create and edit them under the API's rules (the same check as the
signed PUT), end them, and browse their periods with their entrants and final standings."""

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from rest_framework.exceptions import ValidationError as DrfValidationError

from common.admin_mixins import ReadOnlyAdminMixin
from common.api_errors import ApiError
from common.formats import iso

from .models import Tournament, TournamentEntrant, TournamentPeriod
from .periods import BadCron, cron_check
from .selectors import periods_list
from .services import tournament_change_check, tournament_end
from .validation import TournamentIn

CONFIG_FIELDS = list(TournamentIn.__dataclass_fields__)
STANDINGS_SHOWN = 500


class TournamentForm(forms.ModelForm):
    class Meta:
        model = Tournament
        fields = ("game", "slug", *CONFIG_FIELDS)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            if data.get("reset"):
                cron_check(data["reset"])
            values: dict[str, Any] = {name: data.get(name) for name in CONFIG_FIELDS}
            config = TournamentIn(**values)
            current = Tournament.objects.get(pk=self.instance.pk) if self.instance.pk else None
            tournament_change_check(current=current, config=config, now=timezone.now())
        except BadCron as exc:
            raise forms.ValidationError({"reset": str(exc)}) from exc
        except ApiError as exc:
            raise forms.ValidationError(str(exc.detail)) from exc
        except DrfValidationError as exc:
            raise forms.ValidationError(str(exc.detail)) from exc
        return data


@admin.register(Tournament)
class TournamentAdmin(admin.ModelAdmin):
    form = TournamentForm
    list_display = ("slug", "game", "title", "category", "scoring", "starts_at", "ends_at", "reset", "ended_at")
    list_filter = ("game", "category")
    search_fields = ("slug", "title")
    readonly_fields = ("ended_at", "created_at", "periods_table")
    actions = ("end_now",)

    def save_model(self, request: HttpRequest, obj: Tournament, form: Any, change: bool) -> None:
        if not change:
            obj.created_at = timezone.now()
        super().save_model(request, obj, form, change)

    def get_readonly_fields(self, request: HttpRequest, obj: Tournament | None = None) -> Any:
        return (*self.readonly_fields, "game", "slug") if obj is not None else self.readonly_fields

    @admin.action(description="End now (the current period ends; no later period starts)")
    def end_now(self, request: HttpRequest, queryset: QuerySet[Tournament]) -> None:
        for tournament in queryset:
            tournament_end(tournament=tournament, now=timezone.now())
        messages.success(request, f"Ended {queryset.count()} tournament(s).")

    @admin.display(description="Periods (newest first)")
    def periods_table(self, obj: Tournament) -> str:
        if obj.pk is None:
            return "-"
        rows = periods_list(tournament=obj, now=timezone.now())[:100]
        finals = dict(obj.periods.values_list("index", "pk"))

        def index_cell(index: int) -> str:
            if index not in finals:
                return str(index)
            url = reverse("admin:competitions_tournamentperiod_change", args=[finals[index]])
            return format_html('<a href="{}">{}</a>', url, index)

        body = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (index_cell(p["index"]), iso(p["starts_at"]), iso(p["ends_at"]), p["status"], p["entrants"])
                for p in rows
            ),
        )
        head = mark_safe("<tr><th>#</th><th>starts</th><th>ends</th><th>status</th><th>entrants</th></tr>")
        return format_html("<table>{}{}</table>", head, body)


@admin.register(TournamentPeriod)
class TournamentPeriodAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The final periods, each with its frozen standings (the first STANDINGS_SHOWN lines)."""

    list_display = ("tournament", "index", "starts_at", "ends_at", "entrants", "finalized_at")
    list_filter = ("tournament__game",)
    search_fields = ("tournament__slug",)
    readonly_fields = ("standings_table",)

    @admin.display(description=f"Final standings (first {STANDINGS_SHOWN})")
    def standings_table(self, obj: TournamentPeriod) -> str:
        rows = obj.standings.order_by("position")[:STANDINGS_SHOWN]
        body = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (r.rank, r.player_id, r.score, r.attempts, json.dumps(r.reward) if r.reward is not None else "")
                for r in rows
            ),
        )
        head = mark_safe("<tr><th>rank</th><th>player</th><th>score</th><th>attempts</th><th>reward</th></tr>")
        return format_html("<table>{}{}</table>", head, body)


@admin.register(TournamentEntrant)
class TournamentEntrantAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("tournament", "period", "player_id", "joined_at")
    list_filter = ("tournament__game",)
    search_fields = ("player_id",)


# Leagues: their admin pages live in their own module.
from . import league_admin  # noqa: E402, F401
