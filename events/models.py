"""Events out: what a studio's backend acts on, published in the transaction of what they report,
read from a signed feed and POSTed to webhooks.

An event's `id` in the API is `feed_id`, given after its transaction commits by one serialised step
per game (services.events_number); the primary key is only the order of publishing. So the feed,
paged by `feed_id`, never skips an event whose transaction committed after a later one's.
"""

from django.contrib.postgres.fields import ArrayField
from django.db import models


class Event(models.Model):
    """One event. `data` is the JSON text of the type's `data` object, kept as written (the key
    order of the contract's tables), never parsed to be sent."""

    # No index of its own: the unique (game, feed_id) leads with it.
    game = models.ForeignKey("seasons.Game", on_delete=models.CASCADE, related_name="events", db_index=False)
    feed_id = models.BigIntegerField(
        null=True, blank=True, help_text="The event's id in the feed and in webhooks: 1, 2, 3, ... per game."
    )
    type = models.CharField(max_length=40)
    data = models.TextField(help_text="The JSON of the event's data.")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["game", "feed_id"], name="event_feed_id_unique")]
        indexes = [
            # The events still to be numbered (events_number): few, and gone from the index once numbered.
            models.Index(fields=["game"], name="event_unnumbered", condition=models.Q(feed_id__isnull=True)),
            models.Index(fields=["created_at"], name="event_created"),  # the prune
        ]

    def __str__(self) -> str:
        return f"{self.type} #{self.feed_id or '-'} ({self.game_id})"


class GameFeed(models.Model):
    """A game's last feed id. Its row lock is the serialised step that numbers the game's events."""

    game = models.OneToOneField("seasons.Game", on_delete=models.CASCADE, primary_key=True, related_name="+")
    last_id = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.game_id}: {self.last_id}"


class Webhook(models.Model):
    """A receiver of a game's events: each event of its types published after its creation is
    POSTed to `url`, signed with `secret` (as a signed request: docs/api.md, "Signing")."""

    game = models.ForeignKey("seasons.Game", on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000, help_text="http:// or https://; redirects are never followed.")
    # Readable, as a server key's: an HMAC needs it. Shown once when the webhook is created.
    secret = models.CharField(max_length=128, editable=False)
    types = ArrayField(
        models.CharField(max_length=40), default=list, blank=True, help_text="Event types sent to it (empty: all)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.url}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class Delivery(models.Model):
    """One event for one webhook: its retry schedule lives here, not in a sleeping task. `attempts`
    counts the tries of this round (a redelivery starts a new one); every try is a DeliveryAttempt."""

    # No index of its own: the unique (event, webhook) leads with it.
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(help_text="When a pending delivery is due.")
    claimed_until = models.DateTimeField(
        null=True, blank=True, help_text="A dispatcher is trying it; due again after this if it never says how it went."
    )
    deadline_at = models.DateTimeField(help_text="No try after this: the delivery fails (24 h after the event).")
    created_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="HTTP status of the last try.")
    last_error = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        verbose_name_plural = "deliveries"
        constraints = [models.UniqueConstraint(fields=["event", "webhook"], name="delivery_once_per_webhook")]
        indexes = [
            # What the dispatcher claims: a webhook's pending deliveries, the due ones first.
            # (the id too: a claim takes them in (next_attempt_at, id) order, read off the index, not sorted:
            # the deliveries of one bulk publish share their time).
            models.Index(
                fields=["webhook", "next_attempt_at", "id"],
                name="delivery_due",
                condition=models.Q(status=DeliveryStatus.PENDING),
            ),
            # The failed ones (the admin's list, a webhook's redelivery): few, by webhook.
            models.Index(fields=["webhook"], name="delivery_failed", condition=models.Q(status=DeliveryStatus.FAILED)),
        ]

    def __str__(self) -> str:
        return f"event {self.event_id} -> webhook {self.webhook_id}: {self.status}"


class DeliveryAttempt(models.Model):
    """One POST of a delivery: when, the answer's status (None: no answer), how long it took, the
    first 1 KB of the answer's body, and what went wrong when nothing came back."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField()
    response_head = models.TextField(blank=True, default="")
    error = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["at"]

    def __str__(self) -> str:
        return f"{self.delivery_id} at {self.at:%Y-%m-%d %H:%M:%S}: {self.status_code or self.error}"
