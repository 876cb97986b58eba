"""Admin sign-in is rate limited (django-axes, settings/auth.py): after 5 wrong passwords for one
username from one address, even the right password is refused with a clear message; another user,
or the same user from another address, signs in as usual; the lockout ends after its cool-off."""

import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/?next=/admin/"


def sign_in(client, username: str, password: str, ip: str = "203.0.113.7"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip)


def signed_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == "/admin/"


@pytest.fixture
def admins():
    User.objects.create_superuser("ops", password="right-horse-battery")
    User.objects.create_superuser("other", password="other-staple-battery")


def test_five_wrong_passwords_lock_that_username_from_that_address(client, admins, settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    for _ in range(4):
        wrong = sign_in(client, "ops", "wrong")
        assert wrong.status_code == 200 and b"Please enter the correct username and password" in wrong.content
    assert sign_in(client, "ops", "wrong").status_code == 429

    refused = sign_in(client, "ops", "right-horse-battery")
    assert refused.status_code == 429
    assert b"Too many failed sign-ins for this username from your address" in refused.content
    assert b"15 minutes" in refused.content
    assert client.get("/admin/").status_code == 302  # not signed in: sent to the login page

    assert signed_in(sign_in(client, "other", "other-staple-battery"))  # another user, same address
    client.logout()
    assert signed_in(sign_in(client, "ops", "right-horse-battery", ip="198.51.100.9"))  # another address


def test_the_lockout_ends_after_its_cool_off(client, admins, settings):
    settings.AXES_COOLOFF_TIME = timedelta(seconds=1)
    for _ in range(5):
        sign_in(client, "ops", "wrong")
    assert sign_in(client, "ops", "right-horse-battery").status_code == 429
    time.sleep(1.2)
    assert signed_in(sign_in(client, "ops", "right-horse-battery"))


def test_a_success_clears_the_count(client, admins):
    for _ in range(4):
        sign_in(client, "ops", "wrong")
    assert signed_in(sign_in(client, "ops", "right-horse-battery"))
    client.logout()
    for _ in range(4):
        assert sign_in(client, "ops", "wrong").status_code == 200
    assert signed_in(sign_in(client, "ops", "right-horse-battery"))


def test_force_login_in_tests_is_unaffected(client, admins):
    for _ in range(5):
        sign_in(client, "ops", "wrong")
    client.force_login(User.objects.get(username="ops"))
    assert client.get("/admin/").status_code == 200
