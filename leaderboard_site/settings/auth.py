"""Admin sign-in: failed logins are rate limited by django-axes, per username and client address.

After ADMIN_LOGIN_FAILURE_LIMIT failures in a row for one username from one address, that pair is
refused (429, with the message below) for ADMIN_LOGIN_LOCKOUT_MIN minutes, even with the right
password; each failure while locked out starts the wait again. Another user, or the same user from
another address, is not affected. A successful sign-in clears the count. The attempts are rows in
PostgreSQL (the admin's "Access attempts"); `python manage.py axes_reset_username NAME` lifts a lockout.

The client address is the ASGI client, which uvicorn takes from X-Forwarded-For only when the
request comes from FORWARDED_ALLOW_IPS (the TLS proxy; docs/operations.md).
"""

from datetime import timedelta

from .env import env_int

AUTHENTICATION_BACKENDS = [
    # First: it refuses a locked-out username and address before any password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("ADMIN_LOGIN_FAILURE_LIMIT", 5)
_LOCKOUT_MIN = env_int("ADMIN_LOGIN_LOCKOUT_MIN", 15)
AXES_COOLOFF_TIME = timedelta(minutes=_LOCKOUT_MIN)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_COOLOFF_MESSAGE = (
    f"Too many failed sign-ins for this username from your address: signing in is refused for "
    f"{_LOCKOUT_MIN} minutes (each further attempt starts the wait again)."
)
# Quiet at start-up (no version banner in every process and command); lockouts are still logged.
AXES_VERBOSE = False
