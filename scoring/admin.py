"""The ledger's admin: the ledger itself (read-only), the moderators' review queue, bans, and the
player accounts whose changes reach the ledger (deletion, region moves). Everything audited."""

from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html_join

from anticheat.models import AuditEntry, Ban
from anticheat.services import audit
from boards.models import Player, SeasonRegion
from common.admin_mixins import ReadOnlyAdminMixin
from common.formats import REGION_RE

from .models import ReviewItem, ScoreEvent
from .moderation import player_ban, results_approve, results_reinstate, results_revoke
from .players import player_delete, player_region_move

MODERATORS = "moderators"


def can_moderate(request) -> bool:
    user = request.user
    return bool(user.is_active and (user.is_superuser or user.groups.filter(name=MODERATORS).exists()))


@admin.register(ScoreEvent)
class ScoreEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The ledger, read-only: results are changed only through moderation actions."""

    list_display = ("match_id", "player_id", "points", "status", "reason", "played_at", "accepted_at", "applied_at")
    list_filter = ("status", "game")
    search_fields = ("player_id", "match_id")
    date_hierarchy = "played_at"
    show_full_result_count = False


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
            "admin/scoring/review_confirm.html",
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


class BanForm(forms.ModelForm):
    revoke_since = forms.DateTimeField(
        required=False, help_text="Optional: also revoke their results played since then (boards corrected)."
    )

    class Meta:
        model = Ban
        fields = ("game", "player_id", "reason", "lifted_at")


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
            "admin/scoring/move_region.html",
            {**self.admin_site.each_context(request), "title": "Move players", "items": queryset, "form": form},
        )
