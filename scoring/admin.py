"""The ledger's admin: the ledger itself (read-only), the moderators' review queue, bans, and the
player accounts whose changes reach the ledger (deletion, region moves). Everything audited."""

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef
from django.http import HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from anticheat.models import Ban
from anticheat.services import audit
from boards.models import Player, SeasonRegion
from common.admin_mixins import ReadOnlyAdminMixin
from common.formats import REGION_RE
from common.operations import digits_only

from .models import EventStatus, ReviewItem, ScoreEvent, UnappliedEvent
from .moderation import player_ban, results_approve, results_reinstate, results_revoke
from .players import player_delete, player_region_move
from .review import (
    PENDING,
    QUEUES,
    RESOLVED,
    CappedPaginator,
    PendingCounts,
    review_condition,
    review_decisions,
    review_evidence,
    review_hold_summaries,
    review_next_pending,
    review_ordering,
    review_pending_count,
    review_pending_counts,
    review_pending_games,
    review_pending_reasons,
    review_search,
)

MODERATORS = "moderators"


def can_moderate(request) -> bool:
    user = request.user
    return bool(user.is_active and (user.is_superuser or user.groups.filter(name=MODERATORS).exists()))


@admin.register(ScoreEvent)
class ScoreEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The ledger, read-only: results are changed only through moderation actions."""

    list_display = ("match_id", "player_id", "points", "status", "reason", "played_at", "accepted_at", "on_boards")
    list_filter = ("status", "game")
    search_fields = ("player_id", "match_id")
    date_hierarchy = "played_at"
    show_full_result_count = False

    def get_queryset(self, request):
        # Whether each row of the page waits in the outbox: a probe of its primary key per row shown.
        return (
            super().get_queryset(request).annotate(queued=Exists(UnappliedEvent.objects.filter(event=OuterRef("pk"))))
        )

    @admin.display(boolean=True, description="on the boards")
    def on_boards(self, obj: ScoreEvent) -> bool | None:
        """Accepted and applied: yes; accepted and still in the outbox: no; any other status: -."""
        if obj.status != EventStatus.ACCEPTED:
            return None
        return not getattr(obj, "queued", False)


class QueueFilter(admin.SimpleListFilter):
    """Pending (the default) or resolved. The rows themselves are chosen by ReviewChangeList, so
    every query of the list stays on the queue's partial index."""

    title = "queue"
    parameter_name = "queue"

    def lookups(self, request, model_admin):
        return list(QUEUES.items())

    def queryset(self, request, queryset):
        return queryset

    def choices(self, changelist):
        current = self.value() or PENDING
        for value, label in self.lookup_choices:
            yield {
                "selected": current == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}, ["game", "reason", "p"]),
                "display": label,
            }


class PendingGameFilter(admin.SimpleListFilter):
    """Only the games with pending items, with their counts (one grouped read of the partial index)."""

    title = "game (pending items)"
    parameter_name = "game"

    def lookups(self, request, model_admin):
        counts = _pending_counts(request)
        return [(str(game_id), f"{slug} ({n:,})") for game_id, slug, n in review_pending_games(counts=counts)]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(game_id=int(value)) if value and digits_only(value) else queryset


class PendingReasonFilter(admin.SimpleListFilter):
    title = "held for (pending items)"
    parameter_name = "reason"

    def lookups(self, request, model_admin):
        counts = _pending_counts(request)
        return [(reason, f"{reason or '-'} ({n:,})") for reason, n in review_pending_reasons(counts=counts)]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(reason=value) if value is not None else queryset


class ReviewChangeList(ChangeList):
    """The list shows the queue's rows alone (pending, or resolved), in the terms of their partial
    index. The page's rows get their latest decision (who, when, why) in one read of the audit log."""

    def get_queryset(self, request, exclude_parameters=None):
        queryset = super().get_queryset(request, exclude_parameters)
        return queryset.filter(review_condition(queue=_queue(request)))

    def get_results(self, request):
        super().get_results(request)
        rows = list(self.result_list)
        decisions = review_decisions(event_ids=[row.id for row in rows])
        summaries = review_hold_summaries(events=rows)
        for row in rows:
            row.decision = decisions.get(row.id)
            row.summary = summaries.get(row.id, "")


def _queue(request) -> str:
    return RESOLVED if request.GET.get("queue") == RESOLVED else PENDING


def _pending_counts(request) -> PendingCounts:
    """The pending counts, read once per request (both filters and the pager use them)."""
    if not hasattr(request, "_review_counts"):
        request._review_counts = review_pending_counts()
    return request._review_counts


@admin.register(ReviewItem)
class ReviewQueueAdmin(admin.ModelAdmin):
    """The review queue: pending items first (oldest first), the evidence on each item's page,
    approve or revoke from there (landing on the next pending item) or in bulk, with a reason.

    At ledger scale (10M results, 50K pending) every query stays on the queue's rows: the rows are
    chosen by the change list (ReviewChangeList) by the condition of a partial index, the pager's count is capped
    (CappedPaginator), there is no full count and no automatic facets (the filters count their
    own options over the pending rows), and the search is an exact player id, match id or #id."""

    list_display = ("id", "player_id", "points", "reason", "evidence", "game", "played_at", "accepted_at", "decided")
    list_display_links = ("id", "player_id")
    list_filter = (QueueFilter, PendingGameFilter, PendingReasonFilter)
    list_select_related = ("game",)
    search_fields = ("player_id",)
    search_help_text = "An exact player id, a match id, or #event id."
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    list_per_page = 50
    actions = ["approve", "revoke", "reinstate"]
    readonly_fields = [f.name for f in ReviewItem._meta.fields]
    change_form_template = "admin/scoring/reviewitem/change_form.html"

    def get_ordering(self, request):
        return review_ordering(queue=_queue(request))

    def get_changelist(self, request, **kwargs):
        return ReviewChangeList

    def get_search_results(self, request, queryset, search_term):
        if not search_term.strip():
            return queryset, False
        return review_search(queryset=queryset, term=search_term), False

    def get_paginator(self, request, queryset, per_page, orphans=0, allow_empty_first_page=True):
        """The pending queue, unsearched, takes its count from the grouped counts the filters read
        anyway; anything else counts its own rows (capped)."""
        known = None
        if _queue(request) == PENDING and not request.GET.get("q") and set(request.GET) <= {"game", "reason", "p", "o"}:
            game = request.GET.get("game", "")
            known = review_pending_count(
                counts=_pending_counts(request),
                game_id=int(game) if digits_only(game) else None,
                reason=request.GET.get("reason"),
            )
        return CappedPaginator(queryset, per_page, orphans, allow_empty_first_page, known_count=known)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return can_moderate(request)

    def has_view_permission(self, request, obj=None):
        return can_moderate(request) or super().has_view_permission(request, obj)

    def has_module_permission(self, request):
        return can_moderate(request) or super().has_module_permission(request)

    def response_action(self, request, queryset):
        """An action on rows picked by id reaches them wherever they are (a revoked result to
        reinstate, an accepted one to revoke): by primary key, never a scan."""
        if request.POST.get("select_across", "0") == "0":
            queryset = self.get_queryset(request)
        return super().response_action(request, queryset)

    def get_actions(self, request):
        return super().get_actions(request) if can_moderate(request) else {}

    @admin.display(description="held for")
    def evidence(self, obj) -> str:
        return getattr(obj, "summary", "")

    @admin.display(description="decided (who, when, why)")
    def decided(self, obj) -> str:
        entry = getattr(obj, "decision", None)
        if entry is None:
            return "-"
        when = f"{entry.created_at:%Y-%m-%d %H:%M}"
        return format_html("{} by {}, {}: {}", entry.action, entry.actor_label, when, entry.reason)

    def get_urls(self):
        return [
            path(
                "<int:object_id>/decide/",
                self.admin_site.admin_view(self.decide_view),
                name="scoring_reviewitem_decide",
            ),
            *super().get_urls(),
        ]

    def changelist_view(self, request, extra_context=None):
        title = f"Review queue: {QUEUES[_queue(request)].lower()}"
        return super().changelist_view(request, {**(extra_context or {}), "title": title})

    def change_view(self, request, object_id, form_url="", extra_context=None):
        event = ScoreEvent.objects.select_related("game", "season").filter(pk=object_id).first()
        extra = dict(extra_context or {})
        if event is not None:
            filters = _filters(request.GET.get("_changelist_filters", ""))
            extra.update(
                evidence=review_evidence(event=event),
                can_moderate=can_moderate(request),
                pending=event.status == EventStatus.PENDING_REVIEW,
                revocable=event.status in (EventStatus.PENDING_REVIEW, EventStatus.ACCEPTED),
                next_id=review_next_pending(after=event, **filters),
                changelist_filters=request.GET.get("_changelist_filters", ""),
                show_save=False,
                show_save_and_continue=False,
                show_save_and_add_another=False,
                show_delete=False,
            )
        return super().change_view(request, object_id, form_url, extra)

    def decide_view(self, request, object_id: int):
        """Approve or revoke one item from its page, then on to the next pending item."""
        if request.method != "POST" or not can_moderate(request):
            raise PermissionDenied
        event = get_object_or_404(ScoreEvent, pk=object_id)
        decision = request.POST.get("decision", "")
        reason = request.POST.get("reason", "").strip()
        kept = request.POST.get("_changelist_filters", "")
        here = reverse("admin:scoring_reviewitem_change", args=[event.pk])
        suffix = f"?{urlencode({'_changelist_filters': kept})}" if kept else ""
        if decision == "approve":
            result = results_approve(event_ids=[event.pk], reason=reason or "approved on review", actor=request.user)
        elif decision == "revoke" and reason:
            result = results_revoke(event_ids=[event.pk], reason=reason, actor=request.user)
        else:
            self.message_user(request, "A revocation needs a reason.", messages.ERROR)
            return HttpResponseRedirect(here + suffix)
        verb = "approved" if decision == "approve" else "revoked"
        if result.changed:
            self.message_user(request, f"#{event.pk} ({event.player_id}, {event.points} points) {verb}.")
        else:
            self.message_user(request, f"#{event.pk} was not eligible (already decided?).", messages.WARNING)
        next_id = review_next_pending(after=event, **_filters(kept))
        if next_id is None:
            self.message_user(request, "The queue is empty.")
            return HttpResponseRedirect(reverse("admin:scoring_reviewitem_changelist") + (f"?{kept}" if kept else ""))
        return HttpResponseRedirect(reverse("admin:scoring_reviewitem_change", args=[next_id]) + suffix)

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


def _filters(changelist_filters: str) -> dict[str, Any]:
    """The queue filters a moderator came from (game, reason), to stay within them when moving on."""
    query = QueryDict(changelist_filters)
    game = query.get("game", "")
    return {"game_id": int(game) if digits_only(game) else None, "reason": query.get("reason") or None}


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
