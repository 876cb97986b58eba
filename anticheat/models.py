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

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.key_id
