"""Shared admin pieces."""

from typing import Any

from django.http import HttpRequest


class ReadOnlyAdminMixin:
    """For records nobody edits by hand: the ledger, the audit log, frozen standings, histories."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
