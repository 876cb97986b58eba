"""Fixtures shared by the scoring tests."""

import pytest
from django.contrib.auth.models import Group, User


@pytest.fixture
def moderator():
    """A staff member of the `moderators` group."""
    user = User.objects.create_user("mod", password="pw", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="moderators")[0])
    return user
