from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html_join

from leaderboard_site.admin_mixins import ReadOnlyAdminMixin
from scoring.models import ReviewItem

from .models import AuditEntry, Ban, GameRules, ServerKey
from .moderation import audit, player_ban, results_approve, results_reinstate, results_revoke
from .services import server_key_revoke, server_key_rotate

MODERATORS = "moderators"


def can_moderate(request) -> bool:
    user = request.user
    return bool(user.is_active and (user.is_superuser or user.groups.filter(name=MODERATORS).exists()))


@admin.register(ServerKey)
class ServerKeyAdmin(admin.ModelAdmin):
    list_display = ("key_id", "game", "label", "created_at", "revoked_at")
    list_filter = ("game",)
    search_fields = ("key_id", "label")
    # The secret is shown once, by create_server_key; the admin never displays it.
    exclude = ("secret",)
    readonly_fields = ("key_id", "game", "created_at", "revoked_at")
    actions = ["rotate_keys", "revoke_keys"]

    def has_add_permission(self, request):
        return False  # created from a game's page or `manage.py create_server_key`: the secret shows once

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


class BanForm(forms.ModelForm):
    revoke_since = forms.DateTimeField(
        required=False, help_text="Optional: also revoke their results played since then (boards corrected)."
    )

    class Meta:
        model = Ban
        fields = ("game", "player_id", "reason", "lifted_at")


@admin.register(GameRules)
class GameRulesAdmin(admin.ModelAdmin):
    list_display = ("game", "player_burst", "player_refill_s", "key_rate_per_s", "key_burst")


@admin.register(Ban)
class BanAdmin(admin.ModelAdmin):
    """Ban (optionally revoking results in a window); lift a ban by setting `lifted at`."""

    form = BanForm
    list_display = ("player_id", "game", "reason", "created_at", "lifted_at")
    list_filter = ("game",)
    search_fields = ("player_id",)

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            if obj.lifted_at:
                audit(action="lift_ban", target=obj.player_id, actor=request.user, game=obj.game, reason=obj.reason)
            return
        result = player_ban(
            game=obj.game,
            player_id=obj.player_id,
            reason=obj.reason,
            revoke_since=form.cleaned_data.get("revoke_since"),
            actor=request.user,
        )
        saved = Ban.objects.filter(game=obj.game, player_id=obj.player_id, lifted_at__isnull=True).first()
        if saved is not None:
            obj.pk = saved.pk
        self.message_user(request, f"{obj.player_id} banned; {result.revoked} result(s) revoked.")


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "actor_label", "action", "game", "target", "reason")
    list_filter = ("action", "game")
    search_fields = ("target", "actor_label", "reason")


@admin.register(ReviewItem)
class ReviewQueueAdmin(admin.ModelAdmin):
    """The review queue: filter, search, approve or revoke in bulk with a reason."""

    list_display = ("id", "player_id", "points", "status", "reason", "game", "season", "played_at", "accepted_at")
    list_filter = ("status", "reason", "game", "season")
    search_fields = ("player_id", "match_id")
    show_facets = admin.ShowFacets.ALWAYS
    actions = ["approve", "revoke", "reinstate"]
    readonly_fields = [f.name for f in ReviewItem._meta.fields] + ["history"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("game", "season")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return can_moderate(request)

    def has_view_permission(self, request, obj=None):
        return can_moderate(request) or super().has_view_permission(request, obj)

    def get_actions(self, request):
        return super().get_actions(request) if can_moderate(request) else {}

    @admin.display(description="history")
    def history(self, obj) -> str:
        entries = AuditEntry.objects.filter(target=str(obj.id)).order_by("created_at")
        return (
            format_html_join(
                "", "<div>{} {} by {}: {}</div>", ((e.created_at, e.action, e.actor_label, e.reason) for e in entries)
            )
            or "-"
        )

    def _confirm(self, request, queryset, *, action: str, verb: str, service):
        if not can_moderate(request):
            self.message_user(request, "Only moderators can do that.", messages.ERROR)
            return None
        reason = request.POST.get("reason", "").strip()
        if request.POST.get("confirm") == "yes" and reason:
            result = service(event_ids=list(queryset.values_list("id", flat=True)), reason=reason, actor=request.user)
            self.message_user(request, f"{verb}: {result.changed} result(s); {result.skipped} skipped (not eligible).")
            return None
        return TemplateResponse(
            request,
            "admin/anticheat/review_confirm.html",
            {
                **self.admin_site.each_context(request),
                "title": f"{verb} results",
                "items": queryset,
                "action": action,
                "verb": verb,
                "reason": reason,
                "error": "A reason is required." if request.POST.get("confirm") == "yes" else "",
                "back": reverse("admin:scoring_reviewitem_changelist"),
            },
        )

    @admin.action(description="Approve the selected results (they go to the boards)")
    def approve(self, request, queryset):
        return self._confirm(request, queryset, action="approve", verb="Approve", service=results_approve)

    @admin.action(description="Revoke the selected results (boards corrected from the ledger)")
    def revoke(self, request, queryset):
        return self._confirm(request, queryset, action="revoke", verb="Revoke", service=results_revoke)

    @admin.action(description="Reinstate the selected revoked results (undo a disqualification)")
    def reinstate(self, request, queryset):
        return self._confirm(request, queryset, action="reinstate", verb="Reinstate", service=results_reinstate)
