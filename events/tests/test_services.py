"""Publishing by position, and the prune as beat runs it: the task `events.prune` deletes what
left the feed's window."""

from datetime import timedelta

import pytest
from django.utils import timezone

from events.models import Event
from events.services import events_publish
from events.tasks import prune
from events.types import PLAYER_BANNED
from seasons.testing import make_game

pytestmark = pytest.mark.django_db


def test_the_task_prunes_events_past_the_window(settings):
    game = make_game("arena")
    for days in (40, 31, 29, 0):
        events_publish(
            game=game,
            type=PLAYER_BANNED,
            data={"player_id": f"p{days}", "revoked": 0},
            now=timezone.now() - timedelta(days=days),
        )
    assert prune() == 2
    settings.EVENTS_KEEP_DAYS = 7
    assert prune() == 1
    assert list(Event.objects.values_list("data", flat=True)) == ['{"player_id":"p0","revoked":0}']


def test_publish_by_position_is_events_publish():
    from events.services import publish

    game = make_game("arena")
    pk = publish(game, "league.cohort_final", {"league": "gold", "entries": []})
    event = Event.objects.get(pk=pk)
    assert (event.type, event.data, event.feed_id) == ("league.cohort_final", '{"league":"gold","entries":[]}', None)
