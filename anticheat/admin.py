from django import forms
from django.contrib import admin, messages
from django.utils import timezone

from common.admin_mixins import ReadOnlyAdminMixin

from .models import AuditEntry, GameRules, ServerKey
from .services import audit, server_key_create, server_key_revoke, server_key_rotate


class ServerKeyForm(forms.ModelForm):
    class Meta:
        model = ServerKey
        fields = ("game", "label")


@admin.register(ServerKey)
class ServerKeyAdmin(admin.ModelAdmin):
    """Keys of the match servers. Adding one shows its secret once (copy it then); the admin never
    shows a secret again."""

    list_display = ("key_id", "game", "label", "created_at", "expires_at", "revoked_at")
    list_filter = ("game",)
    search_fields = ("key_id", "label")
    actions = ["rotate_keys", "revoke_keys"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = ServerKeyForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("game", "label")
        return ("key_id", "game", "label", "created_at", "expires_at", "revoked_at")

    def get_readonly_fields(self, request, obj=None):
        return ("key_id", "game", "created_at", "expires_at", "revoked_at") if obj else ()

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        key = server_key_create(game=obj.game, label=obj.label or f"admin {request.user.get_username()}")
        audit(action="create_key", target=key.key_id, actor=request.user, game=key.game)
        obj.pk = key.pk
        self.message_user(
            request,
            f"{key.game.slug}: key {key.key_id}, secret {key.secret} (shown once: copy it now).",
            messages.WARNING,
        )

    @admin.action(description="Revoke the selected keys (401 at once)")
    def revoke_keys(self, request, queryset):
        for key in queryset:
            server_key_revoke(key_id=key.key_id)
            audit(action="revoke_key", target=key.key_id, actor=request.user, game=key.game)
        self.message_user(request, f"{queryset.count()} key(s) revoked.")

    @admin.action(description="Rotate the selected keys (new key now; the old one works 24 h more)")
    def rotate_keys(self, request, queryset):
        for key in queryset.filter(revoked_at__isnull=True):
            new = server_key_rotate(key_id=key.key_id, overlap_s=86400, now=timezone.now())
            audit(action="rotate_key", target=key.key_id, actor=request.user, game=key.game, reason=new.key_id)
            self.message_user(
                request,
                f"New key {new.key_id}, secret {new.secret} (shown once: copy it now). {key.key_id} retires in 24 h.",
                messages.WARNING,
            )


@admin.register(GameRules)
class GameRulesAdmin(admin.ModelAdmin):
    """A game's limits. A change is in force within a second in every web process."""

    list_display = ("game", "player_burst", "player_refill_s", "key_rate_per_s", "key_burst")


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "actor_label", "action", "game", "target", "reason")
    list_filter = ("action", "game")
    search_fields = ("target", "actor_label", "reason")
