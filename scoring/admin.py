from django.contrib import admin

from leaderboard_site.admin_mixins import ReadOnlyAdminMixin

from .models import ScoreEvent


@admin.register(ScoreEvent)
class ScoreEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The ledger, read-only: results are changed only through moderation actions."""

    list_display = ("match_id", "player_id", "points", "status", "reason", "played_at", "accepted_at", "applied_at")
    list_filter = ("status", "game")
    search_fields = ("player_id", "match_id")
    date_hierarchy = "played_at"
    show_full_result_count = False
