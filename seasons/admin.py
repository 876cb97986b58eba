from django.contrib import admin
from django.utils import timezone

from .models import Game, Season


class SeasonInline(admin.TabularInline):
    model = Season
    extra = 0
    fields = ("name", "starts_at", "ends_at", "grace_s", "frozen_at", "archived_at")
    readonly_fields = ("frozen_at", "archived_at")
    show_change_link = True


@admin.register(Game)
class GameAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "tie_rule", "max_points_per_match", "created_at")
    search_fields = ("slug", "name")
    inlines = [SeasonInline]

    def get_readonly_fields(self, request, obj=None):
        # Changing the slug or tie rule of a live game would orphan or misrank its boards.
        return ("slug", "tie_rule") if obj else ()


@admin.register(Season)
class SeasonAdmin(admin.ModelAdmin):
    list_display = ("game", "name", "starts_at", "ends_at", "grace_s", "status")
    list_filter = ("game",)
    readonly_fields = ("time_bits", "frozen_at", "archived_at", "created_at")

    @admin.display(description="status")
    def status(self, obj: Season) -> str:
        return obj.status_at(timezone.now())
