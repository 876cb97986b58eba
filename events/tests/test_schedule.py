"""The shipped retry schedule's arithmetic (the settings' defaults): about 1 s, doubling, at most
10 minutes apart, for 24 hours, then failed. The other tests shorten it through the settings."""

import itertools
from datetime import UTC, datetime, timedelta

from django.conf import settings

from events.delivery import Job, Outcome, _next_state
from events.schedule import Schedule, shipped

DAY_S = 86400


def tries_of_a_dead_receiver(schedule: Schedule) -> list[float]:
    """The seconds after the event at which each try comes when every try fails."""
    start = datetime(2026, 10, 13, tzinfo=UTC)
    deadline = start + timedelta(seconds=DAY_S)
    at, tries = start, [0.0]
    while True:
        at = schedule.next_try(failed_tries=len(tries), now=at, deadline=deadline)
        if at is None:
            return tries
        tries.append((at - start).total_seconds())


def test_the_shipped_settings():
    assert (settings.WEBHOOK_RETRY_BASE_S, settings.WEBHOOK_RETRY_MAX_S) == (1.0, 600.0)
    assert (settings.WEBHOOK_RETRY_FOR_S, settings.WEBHOOK_TIMEOUT_S) == (86400.0, 10.0)
    assert shipped() == Schedule(base_s=1.0, cap_s=600.0)


def test_pauses_double_from_one_second_up_to_ten_minutes():
    schedule = shipped()
    pauses = [schedule.pause_s(n) for n in range(1, 14)]
    assert pauses == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600, 600]
    assert schedule.pause_s(10_000) == 600  # no overflow however long it goes on


def test_a_dead_receiver_is_tried_153_times_over_24_hours_then_the_delivery_fails():
    tries = tries_of_a_dead_receiver(shipped())
    gaps = [b - a for a, b in itertools.pairwise(tries)]
    assert tries[:8] == [0, 1, 3, 7, 15, 31, 63, 127]
    assert max(gaps) == 600 and all(gap <= 600 for gap in gaps)
    assert len(tries) == 153  # 1 + 10 doubling pauses (1,023 s) + 142 pauses of 600 s
    assert tries[-1] == 1023 + 142 * 600 == 86223  # the last try: under 10 minutes before the 24 h
    assert DAY_S - tries[-1] < 600
    # A receiver back after 60 s down gets the first event's next try 3 s later (at 63 s), and with
    # it (the 2xx brings every waiting retry of the webhook forward) the rest of its backlog.
    back = 60
    print(
        f"\nshipped schedule: a receiver down {back} s is tried again {min(t for t in tries if t >= back) - back:g} s "
        "after it is back; down 1 h: within",
        min(t for t in tries if t >= 3600) - 3600,
        "s",
    )


def test_a_try_after_the_deadline_is_a_failure_and_a_2xx_a_delivery():
    now = datetime(2026, 10, 13, tzinfo=UTC)
    job = Job(1, 1, "http://x/", "s", 1, b"{}", attempts=3, deadline_at=now + timedelta(seconds=10))
    schedule = shipped()
    # The pause counts from the end of the try: a try that timed out after 10 s waits its pause after that.
    roomy = Job(1, 1, "http://x/", "s", 1, b"{}", attempts=3, deadline_at=now + timedelta(seconds=60))
    timed_out = Outcome(roomy, now, 10_000, error="no answer within 10 s")
    assert _next_state(timed_out, schedule)[1:3] == ("pending", now + timedelta(seconds=10 + 8))
    assert _next_state(Outcome(job, now, 0, status=503), schedule)[1:3] == ("pending", now + timedelta(seconds=8))
    late = Job(1, 1, "http://x/", "s", 1, b"{}", attempts=4, deadline_at=now + timedelta(seconds=10))
    assert _next_state(Outcome(late, now, 5, error="refused"), schedule)[1:3] == ("failed", None)
    answered = now + timedelta(milliseconds=5)
    assert _next_state(Outcome(late, now, 5, status=204), schedule)[1:4] == ("delivered", None, answered)
