"""The retry schedule of a webhook delivery, as arithmetic (the times themselves are kept in the
database, on each Delivery: the dispatcher never sleeps on a retry).

After the n-th failed try of a round the pause is base * 2^(n-1), at most `cap`: with the shipped
settings 1, 2, 4, ... 512 s, then 600 s (10 minutes) apart. No try comes after the round's deadline
(24 hours after the event, or after a redelivery): the delivery has failed once the next try would.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings


@dataclass(frozen=True)
class Schedule:
    base_s: float
    cap_s: float

    def pause_s(self, failed_tries: int) -> float:
        """The pause after the `failed_tries`-th failed try in a row (1 for the first)."""
        if failed_tries < 1:
            return 0.0
        doublings = min(failed_tries - 1, 64)  # past 2^64 any base is over any cap
        return float(min(self.cap_s, self.base_s * 2.0**doublings))

    def next_try(self, *, failed_tries: int, now: datetime, deadline: datetime) -> datetime | None:
        """When to try again after `failed_tries` failures, or None: the delivery has failed."""
        at = now + timedelta(seconds=self.pause_s(failed_tries))
        return at if at <= deadline else None


def shipped() -> Schedule:
    """The schedule of the settings (WEBHOOK_RETRY_BASE_S, WEBHOOK_RETRY_MAX_S)."""
    return Schedule(base_s=float(settings.WEBHOOK_RETRY_BASE_S), cap_s=float(settings.WEBHOOK_RETRY_MAX_S))
