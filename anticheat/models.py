"""Server keys: each belongs to one game; match servers sign with its secret (HMAC-SHA256)."""

from django.db import models


class ServerKey(models.Model):
    # The secret must be readable to verify an HMAC, so it is stored, and shown once on creation.
    key_id = models.CharField(max_length=40, unique=True)
    secret = models.CharField(max_length=128)
    game = models.ForeignKey("seasons.Game", on_delete=models.PROTECT, related_name="server_keys")
    label = models.CharField(max_length=100, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Set by a rotation: the old key works until then, alongside the new one."
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.key_id


class GameRules(models.Model):
    """Per-game limits; an empty field takes the default from the environment (settings).

    A limit of 0 switches it off (a studio behind a CDN, or a benchmark from one address).
    """

    game = models.OneToOneField("seasons.Game", on_delete=models.CASCADE, related_name="rules")
    player_burst = models.PositiveIntegerField(
        null=True, blank=True, help_text="Results a player may have at once before quarantine (default 5)."
    )
    player_refill_s = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds per new token in a player's bucket (default 60)."
    )
    key_rate_per_s = models.PositiveIntegerField(
        null=True, blank=True, help_text="Signed requests per second per server key (default 50)."
    )
    key_burst = models.PositiveIntegerField(
        null=True, blank=True, help_text="Requests a key may send at once (default 100)."
    )
    max_points_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Soft rule: more points per minute of duration_s goes to review (default 0: off).",
    )
    max_matches_per_hour = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Soft rule: a player's matches beyond this many an hour go to review (default 0: off).",
    )
    min_duration_s = models.PositiveIntegerField(
        null=True, blank=True, help_text="Hard rule: a shorter match is rejected as implausible (default 0: off)."
    )

    class Meta:
        verbose_name_plural = "game rules"

    def __str__(self) -> str:
        return f"rules of {self.game_id}"


class Ban(models.Model):
    """A banned player's new results are rejected (`banned`). Lifting a ban keeps the row."""

    game = models.ForeignKey("seasons.Game", on_delete=models.CASCADE, related_name="bans")
    player_id = models.CharField(max_length=64)
    reason = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["game", "player_id"], condition=models.Q(lifted_at__isnull=True), name="one_active_ban"
            )
        ]

    def __str__(self) -> str:
        return f"{self.player_id} banned"


class AuditEntry(models.Model):
    """Every moderator and key action: who, when, what, why. Never edited, never deleted."""

    actor = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL)
    actor_label = models.CharField(max_length=150, help_text="The user, or the command that acted.")
    action = models.CharField(max_length=40)
    game = models.ForeignKey("seasons.Game", null=True, blank=True, on_delete=models.SET_NULL)
    target = models.CharField(max_length=200, help_text="An event id, a key id or a player id.")
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "audit log"
        indexes = [models.Index(fields=["target"], name="audit_target")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_label} {self.action} {self.target}"
