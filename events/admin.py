"""The admin of events out: webhooks (add one: its secret shows once), their deliveries with every
attempt, and failed deliveries sent again (one, a selection, or all of a webhook's)."""

from django import forms
from django.contrib import admin, messages
from django.core.validators import URLValidator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from common.admin_mixins import ReadOnlyAdminMixin

from .models import Delivery, DeliveryAttempt, Event, Webhook
from .services import deliveries_redeliver, deliveries_redeliver_failed, webhook_create, webhook_delete
from .types import EVENT_TYPES


class WebhookForm(forms.ModelForm):
    url = forms.URLField(
        max_length=2000,
        assume_scheme="https",
        validators=[URLValidator(schemes=["http", "https"])],
        help_text="http:// or https://; redirects are never followed.",
    )
    types = forms.MultipleChoiceField(
        choices=[(t, t) for t in EVENT_TYPES],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every type.",
    )

    class Meta:
        model = Webhook
        fields = ("game", "url", "types")


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    """Receivers of a game's events. Adding one shows its secret once (copy it then). Deleting one
    deletes its deliveries and their attempts (events.services.webhook_delete)."""

    form = WebhookForm
    list_display = ("id", "game", "url", "types", "created_at")
    list_filter = ("game",)
    search_fields = ("url",)
    actions = ["redeliver_failed"]

    def get_readonly_fields(self, request, obj=None):
        return ("game", "created_at") if obj else ()

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        hook = webhook_create(game=obj.game, url=obj.url, types=form.cleaned_data.get("types") or [])
        obj.pk = hook.pk
        self.message_user(
            request,
            f"Webhook #{hook.pk} of {hook.game.slug}: secret {hook.secret} (shown once: copy it now).",
            messages.WARNING,
        )

    def get_deleted_objects(self, objs, request):
        """The webhooks and how many deliveries go with them: deliveries are read-only in the
        admin, so Django's own list would refuse the deletion (webhook_delete removes them)."""
        hooks = list(objs)
        deliveries = Delivery.objects.filter(webhook__in=hooks).count()
        return [str(h) for h in hooks], {"webhooks": len(hooks), "deliveries": deliveries}, set(), []

    def delete_model(self, request, obj):
        webhook_delete(webhook_id=obj.pk)

    def delete_queryset(self, request, queryset):
        for webhook_id in queryset.values_list("id", flat=True):
            webhook_delete(webhook_id=webhook_id)

    @admin.action(description="Send every failed delivery of the selected webhooks again")
    def redeliver_failed(self, request: HttpRequest, queryset: QuerySet[Webhook]) -> None:
        sent = deliveries_redeliver_failed(webhook_ids=list(queryset.values_list("id", flat=True)), now=timezone.now())
        self.message_user(request, f"{sent} failed deliveries are pending again (due now).")


class AttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    fields = ("at", "status_code", "latency_ms", "error", "response_head")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("-at",)

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Every event for every webhook: its state, its tries (on its page), and the action that sends
    failed ones again."""

    list_display = (
        "id",
        "webhook",
        "event_id_in_feed",
        "event_type",
        "status",
        "attempts",
        "last_status",
        "last_error",
        "next_attempt_at",
        "created_at",
        "delivered_at",
    )
    list_filter = ("status", "webhook", "event__type")
    list_select_related = ("event", "webhook")
    show_full_result_count = False
    inlines = [AttemptInline]
    actions = ["redeliver"]
    ordering = ("-id",)

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="event id")
    def event_id_in_feed(self, obj: Delivery) -> int | None:
        return obj.event.feed_id

    @admin.display(description="type")
    def event_type(self, obj: Delivery) -> str:
        return obj.event.type

    @admin.action(description="Send the selected failed deliveries again")
    def redeliver(self, request: HttpRequest, queryset: QuerySet[Delivery]) -> None:
        ids = list(queryset.values_list("id", flat=True))
        sent = deliveries_redeliver(delivery_ids=ids, now=timezone.now())
        level = messages.SUCCESS if sent == len(ids) else messages.WARNING
        skipped = len(ids) - sent
        self.message_user(request, f"{sent} delivery(ies) pending again; {skipped} not failed, left alone.", level)


@admin.register(Event)
class EventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("feed_id", "game", "type", "created_at")
    list_filter = ("game", "type")
    ordering = ("-id",)
    show_full_result_count = False
