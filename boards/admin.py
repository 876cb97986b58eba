from django.contrib import admin
from django.http import HttpRequest, HttpResponseRedirect, StreamingHttpResponse
from django.urls import path, reverse
from django.utils.html import format_html

from common.admin_mixins import ReadOnlyAdminMixin

from .exports import standings_csv, standings_json
from .models import Friendship, FrozenStanding, SeasonStandings
from .standings import standings_count


@admin.register(Friendship)
class FriendshipAdmin(admin.ModelAdmin):
    list_display = ("player_a", "player_b", "game", "created_at")
    list_filter = ("game",)
    search_fields = ("player_a", "player_b")


@admin.register(FrozenStanding)
class FrozenStandingAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("season", "board", "region", "period", "rank", "player_id", "score")
    list_filter = ("board", "region")
    search_fields = ("player_id",)
    show_full_result_count = False


@admin.register(SeasonStandings)
class SeasonStandingsAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Frozen seasons and their final standings, as CSV or JSON (what a prize payout reads)."""

    list_display = ("game", "name", "frozen_at", "archived_at", "rows", "downloads")
    list_filter = ("game",)

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def get_queryset(self, request):
        return super().get_queryset(request).filter(frozen_at__isnull=False).select_related("game")

    @admin.display(description="standing rows")
    def rows(self, obj: SeasonStandings) -> int:
        return standings_count(season=obj)

    @admin.display(description="final standings")
    def downloads(self, obj: SeasonStandings) -> str:
        return format_html(
            '<a href="{}">CSV</a> · <a href="{}">JSON</a>',
            reverse("admin:boards_seasonstandings_export", args=[obj.pk, "csv"]),
            reverse("admin:boards_seasonstandings_export", args=[obj.pk, "json"]),
        )

    def get_urls(self):
        extra = [
            path(
                "<int:pk>/export/<str:fmt>/",
                self.admin_site.admin_view(self.export_view),
                name="boards_seasonstandings_export",
            )
        ]
        return extra + super().get_urls()

    def export_view(self, request: HttpRequest, pk: int, fmt: str):
        season = SeasonStandings.objects.select_related("game").filter(pk=pk).first()
        if season is None or season.frozen_at is None or fmt not in {"csv", "json"}:
            self.message_user(request, "Standings exist once the season is frozen.")
            return HttpResponseRedirect(reverse("admin:boards_seasonstandings_changelist"))
        stream = standings_csv(season) if fmt == "csv" else standings_json(season)
        response = StreamingHttpResponse(stream, content_type="text/csv" if fmt == "csv" else "application/json")
        response["Content-Disposition"] = f'attachment; filename="{season.game.slug}-season-{season.id}.{fmt}"'
        return response
