from django.contrib import admin

from .models import Player


@admin.register(Player)
class PlayerAdmin(admin.ModelAdmin):
    list_display = ("player_id", "game", "display_name", "region", "hidden", "created_at")
    list_filter = ("game", "hidden")
    search_fields = ("player_id", "display_name")
    readonly_fields = ("game", "player_id", "created_at")
