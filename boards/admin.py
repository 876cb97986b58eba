from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse

from anticheat.moderation import audit
from scoring.validation import REGION_RE

from .models import Friendship, Player, SeasonRegion
from .services import player_delete, player_region_move


@admin.register(Player)
class PlayerAdmin(admin.ModelAdmin):
    list_display = ("player_id", "game", "display_name", "region", "hidden", "deleted_at", "created_at")
    list_filter = ("game", "hidden")
    search_fields = ("player_id", "display_name")
    readonly_fields = ("game", "player_id", "created_at", "deleted_at", "hidden")
    actions = ["delete_accounts"]

    @admin.action(description="Delete the selected accounts (off every board at once, ledger pseudonymised)")
    def delete_accounts(self, request, queryset):
        for player in queryset.filter(deleted_at__isnull=True).select_related("game"):
            player_delete(game=player.game, player_id=player.player_id)
            audit(action="delete_account", target=player.player_id, actor=request.user, game=player.game)
        self.message_user(request, "Accounts deleted.", messages.SUCCESS)


class MoveForm(forms.Form):
    region = forms.RegexField(regex=REGION_RE, help_text="2-16 of [a-z0-9-]")
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), help_text="Kept in the audit log.")


@admin.register(SeasonRegion)
class SeasonRegionAdmin(admin.ModelAdmin):
    list_display = ("player_id", "season", "region", "created_at")
    list_filter = ("season__game", "region")
    search_fields = ("player_id",)
    readonly_fields = ("season", "player_id", "region", "created_at")
    actions = ["move_region"]

    @admin.action(description="Move the selected players to another region (boards corrected)")
    def move_region(self, request, queryset):
        form = MoveForm(request.POST if request.POST.get("confirm") == "yes" else None)
        if form.is_bound and form.is_valid():
            for row in queryset.select_related("season__game"):
                old = player_region_move(season=row.season, player_id=row.player_id, region=form.cleaned_data["region"])
                audit(
                    action="move_region",
                    target=row.player_id,
                    actor=request.user,
                    game=row.season.game,
                    reason=f"{old} -> {form.cleaned_data['region']}: {form.cleaned_data['reason']}",
                )
            self.message_user(request, f"{queryset.count()} player(s) moved.", messages.SUCCESS)
            return None
        return TemplateResponse(
            request,
            "admin/boards/move_region.html",
            {**self.admin_site.each_context(request), "title": "Move players", "items": queryset, "form": form},
        )


@admin.register(Friendship)
class FriendshipAdmin(admin.ModelAdmin):
    list_display = ("player_a", "player_b", "game", "created_at")
    list_filter = ("game",)
    search_fields = ("player_a", "player_b")
