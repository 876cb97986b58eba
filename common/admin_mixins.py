"""Shared admin pieces."""


class ReadOnlyAdminMixin:
    """For records nobody edits by hand: the ledger, the audit log, frozen standings, histories."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
