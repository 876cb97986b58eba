from django.contrib import admin

from .models import ServerKey


@admin.register(ServerKey)
class ServerKeyAdmin(admin.ModelAdmin):
    list_display = ("key_id", "game", "label", "created_at", "revoked_at")
    list_filter = ("game",)
    search_fields = ("key_id", "label")
    # The secret is shown once, by create_server_key; the admin never displays it.
    exclude = ("secret",)
    readonly_fields = ("key_id", "game", "created_at")

    def has_add_permission(self, request):
        return False  # keys are created by `manage.py create_server_key` (the secret is printed once)
