from datetime import timedelta

from cronsim import CronSim
from django import forms
from django.contrib import admin, messages
from django.utils import timezone

from common.admin_mixins import ReadOnlyAdminMixin

from .catalog import catalog_publish_on_commit
from .models import Game, Season, SeasonPointer, SeasonPointerChange
from .services import pointer_rollback, pointer_set, season_end, time_bits_for_window


class SeasonForm(forms.ModelForm):
    class Meta:
        model = Season
        fields = ("game", "name", "starts_at", "ends_at", "grace_s")

    def clean(self):
        data = super().clean() or {}
        game, starts, ends = data.get("game"), data.get("starts_at"), data.get("ends_at")
        if starts and ends and ends <= starts:
            raise forms.ValidationError("A season ends after it starts.")
        if data.get("grace_s") is not None and data["grace_s"] < 0:
            raise forms.ValidationError("Grace is 0 seconds or more.")
        if game and starts and ends:
            overlapping = Season.objects.filter(game=game, starts_at__lt=ends, ends_at__gt=starts)
            if self.instance.pk:
                overlapping = overlapping.exclude(pk=self.instance.pk)
            if overlapping.exists():
                raise forms.ValidationError("Seasons of one game must not overlap.")
        if self.instance.pk and starts and ends and self.instance.starts_at <= timezone.now():
            # A started season holds results played inside its window as it was: the ledger reads a
            # season's results by that window (scoring/ledger_partitions.py, `played_window`), so it
            # may grow but not leave them out. `end_season` ends a season now.
            if starts > self.instance.starts_at:
                raise forms.ValidationError("A season that has started cannot start later.")
            if ends < min(self.instance.ends_at, timezone.now()):
                raise forms.ValidationError("A season cannot end before now; use End season to end it now.")
        if self.instance.pk and ends and starts:
            # time_bits was sized at creation: a longer season must still fit it.
            window = (ends - starts + timedelta(seconds=data.get("grace_s") or 0)).total_seconds()
            if window >= 2**self.instance.time_bits:
                raise forms.ValidationError("This season cannot be made that long; create a new one.")
        return data


class SeasonInline(admin.TabularInline):
    model = Season
    extra = 0
    fields = ("name", "starts_at", "ends_at", "grace_s", "board_shards", "frozen_at", "archived_at")
    readonly_fields = ("name", "starts_at", "ends_at", "grace_s", "board_shards", "frozen_at", "archived_at")
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class GameForm(forms.ModelForm):
    class Meta:
        model = Game
        fields = (
            "slug",
            "name",
            "tie_rule",
            "ascending",
            "max_points_per_match",
            "board_shards",
            "season_schedule_days",
            "season_schedule_cron",
        )

    def clean_season_schedule_cron(self):
        value = self.cleaned_data.get("season_schedule_cron", "").strip()
        if value:
            try:
                CronSim(value, timezone.now())
            except Exception as exc:  # cronsim raises CronSimError for any malformed part
                raise forms.ValidationError(f"Not a cron expression: {exc}") from exc
        return value


@admin.register(Game)
class GameAdmin(admin.ModelAdmin):
    form = GameForm
    list_display = (
        "slug",
        "name",
        "tie_rule",
        "max_points_per_match",
        "board_shards",
        "season_schedule_days",
        "created_at",
    )
    search_fields = ("slug", "name")
    inlines = [SeasonInline]
    actions = ["end_current_season"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        catalog_publish_on_commit(slug=obj.slug)  # readers see a new name at once

    def get_readonly_fields(self, request, obj=None):
        # Changing the slug or tie rule of a live game would orphan or misrank its boards.
        return ("slug", "tie_rule", "ascending") if obj else ()

    @admin.action(description="End the current season now (its grace applies, then it freezes; the next one starts)")
    def end_current_season(self, request, queryset):
        for game in queryset:
            try:
                ended = season_end(game=game, now=timezone.now())
            except ValueError as exc:
                self.message_user(request, str(exc), messages.WARNING)
                continue
            self.message_user(request, f"{game.slug}: season {ended.season.id} is {ended.status}.")


@admin.register(Season)
class SeasonAdmin(admin.ModelAdmin):
    form = SeasonForm
    list_display = ("game", "name", "starts_at", "ends_at", "grace_s", "board_shards", "status")
    list_filter = ("game",)
    # board_shards is the game's when the season is created: fixed, so no live board is resharded.
    readonly_fields = ("time_bits", "board_shards", "frozen_at", "archived_at", "created_at")

    @admin.display(description="status")
    def status(self, obj: Season) -> str:
        return obj.status_at(timezone.now())

    def save_model(self, request, obj, form, change):
        if not change:  # the reach-time bits are sized once, for the window plus grace
            window_s = int((obj.ends_at - obj.starts_at).total_seconds()) + obj.grace_s
            obj.time_bits = time_bits_for_window(window_s)
            obj.board_shards = obj.game.board_shards
            obj.starts_at = obj.starts_at.replace(microsecond=0)
        super().save_model(request, obj, form, change)
        catalog_publish_on_commit(slug=obj.game.slug)


@admin.register(SeasonPointer)
class SeasonPointerAdmin(admin.ModelAdmin):
    """Which season readers get by default. Change it here, or roll back the last change."""

    list_display = ("game", "season", "version", "updated_at")
    readonly_fields = ("game", "version", "updated_at")
    fields = ("game", "season", "version", "updated_at")
    actions = ["roll_back"]

    def has_add_permission(self, request):
        return False  # created with the game

    def save_model(self, request, obj, form, change):
        pointer_set(game=obj.game, season=obj.season, actor=request.user.get_username(), reason="admin")

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "season" and request.resolver_match and request.resolver_match.kwargs.get("object_id"):
            pointer = SeasonPointer.objects.filter(pk=request.resolver_match.kwargs["object_id"]).first()
            if pointer is not None:
                kwargs["queryset"] = Season.objects.filter(game=pointer.game)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.action(description="Roll back the selected pointers to their previous season")
    def roll_back(self, request, queryset):
        for pointer in queryset:
            try:
                pointer_rollback(game=pointer.game, actor=request.user.get_username())
            except ValueError as exc:
                self.message_user(request, f"{pointer.game}: {exc}", messages.WARNING)


@admin.register(SeasonPointerChange)
class SeasonPointerChangeAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("game", "version", "from_season", "to_season", "actor", "reason", "created_at")
    list_filter = ("game",)
