"""The leagues in the admin: define them under the API's rules (the same validation and the same
`league_started` check as the signed PUT), see each division's players and cohorts in the current
period, and browse cohorts of every period with their members or frozen standings."""

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from common.admin_mixins import ReadOnlyAdminMixin
from common.api_errors import ApiError
from common.formats import iso

from .league_models import League, LeagueCohort, LeagueMember, LeaguePeriod
from .league_selectors import league_view
from .league_services import league_change_check
from .league_validation import FIELDS, league_validate

MEMBERS_SHOWN = 1000


class LeagueForm(forms.ModelForm):
    class Meta:
        model = League
        fields = ("game", "slug", *FIELDS)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        raw: dict[str, Any] = {name: data.get(name) for name in FIELDS}
        starts_at = raw.get("starts_at")
        raw["starts_at"] = iso(starts_at) if starts_at is not None else None
        config, errors = league_validate(raw)
        if config is None:
            raise forms.ValidationError({name: "; ".join(problems) for name, problems in errors.items()})
        current = League.objects.get(pk=self.instance.pk) if self.instance.pk else None
        try:
            league_change_check(current=current, config=config, now=timezone.now())
        except ApiError as exc:
            raise forms.ValidationError(str(exc.detail)) from exc
        data["reset"], data["divisions"] = config.reset, config.divisions
        return data


@admin.register(League)
class LeagueAdmin(admin.ModelAdmin):
    form = LeagueForm
    list_display = ("slug", "game", "title", "cohort_size", "scoring", "starts_at", "reset", "demote_idle")
    list_filter = ("game",)
    search_fields = ("slug", "title")
    readonly_fields = ("created_at", "divisions_table")

    def save_model(self, request: HttpRequest, obj: League, form: Any, change: bool) -> None:
        if not change:
            obj.created_at = timezone.now()
        super().save_model(request, obj, form, change)

    def get_readonly_fields(self, request: HttpRequest, obj: League | None = None) -> Any:
        return (*self.readonly_fields, "game", "slug") if obj is not None else self.readonly_fields

    @admin.display(description="Divisions in the period shown (highest first)")
    def divisions_table(self, obj: League) -> str:
        if obj.pk is None:
            return "-"
        view = league_view(league=obj, now=timezone.now())
        period = view["period"]
        url = reverse("admin:competitions_leaguecohort_changelist")
        index = period["index"] if period else 0
        rows = (
            (
                d["name"],
                d["promote"],
                d["demote"],
                d["players"],
                format_html('<a href="{}?league__id__exact={}&period={}">{}</a>', url, obj.pk, index, d["cohorts"]),
            )
            for d in reversed(view["divisions"])
        )
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows)
        head = mark_safe("<tr><th>division</th><th>promote</th><th>demote</th><th>players</th><th>cohorts</th></tr>")
        caption = f"period {period['index']} ({period['status']})" if period else "no period"
        return format_html("<p>{}</p><table>{}{}</table>", caption, head, body)


@admin.register(LeaguePeriod)
class LeaguePeriodAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("league", "index", "starts_at", "ends_at", "state", "cohorts", "players", "finalized_at")
    list_filter = ("league__game", "state")


@admin.register(LeagueCohort)
class LeagueCohortAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Every cohort of every period: its members while it runs, its frozen standings after."""

    list_display = ("league", "period", "division_name", "number", "players", "final_at")
    list_filter = ("league__game", "league", "period", "division")
    readonly_fields = ("members_table",)

    @admin.display(description="division")
    def division_name(self, obj: LeagueCohort) -> str:
        return str(obj.league.divisions[obj.division]["name"])

    @admin.display(description=f"Members (first {MEMBERS_SHOWN})")
    def members_table(self, obj: LeagueCohort) -> str:
        if obj.final_at is not None:
            rows: Any = obj.standings.order_by("position").values_list("rank", "player_id", "score", "outcome")
            head = mark_safe("<tr><th>rank</th><th>player</th><th>score</th><th>outcome</th></tr>")
            cells = "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"
        else:
            rows = (
                LeagueMember.objects.filter(
                    league=obj.league, period=obj.period, division=obj.division, number=obj.number
                )
                .order_by("joined_at", "player_id")
                .values_list("player_id", "joined_at")
            )
            rows = ((player_id, iso(joined)) for player_id, joined in rows)
            head = mark_safe("<tr><th>player</th><th>joined</th></tr>")
            cells = "<tr><td>{}</td><td>{}</td></tr>"
        body = format_html_join("", cells, list(rows)[:MEMBERS_SHOWN])
        return format_html("<table>{}{}</table>", head, body)
