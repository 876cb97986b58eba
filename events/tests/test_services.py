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


def test_events_published_from_a_query_follow_its_order_and_get_their_deliveries():
    from events.models import Delivery
    from events.services import events_feed, events_publish_select, webhook_create
    from events.types import UnknownType

    game = make_game("arena")
    other = make_game("other")
    cohorts = webhook_create(game=game, url="https://studio.example/hook", types=["league.cohort_final"])
    webhook_create(game=game, url="https://studio.example/bans", types=[PLAYER_BANNED])
    webhook_create(game=other, url="https://other.example/hook")
    now = timezone.now()
    query = "SELECT '{\"n\":' || n || '}', -n FROM generate_series(1, %s) AS n"
    assert events_publish_select(game=game, type="league.cohort_final", query=query, params=[3], now=now) == 3
    events = list(Event.objects.filter(game=game).order_by("pk"))
    assert [e.data for e in events] == ['{"n":3}', '{"n":2}', '{"n":1}']  # the order column's order
    assert {(e.type, e.created_at) for e in events} == {("league.cohort_final", now)}
    deliveries = Delivery.objects.order_by("event_id")
    assert [(d.event_id, d.webhook_id, d.status) for d in deliveries] == [(e.pk, cohorts.pk, "pending") for e in events]
    page = events_feed(game=game, after=0, limit=10, types=None, now=now)
    assert [e.feed_id for e in Event.objects.filter(game=game).order_by("pk")] == [1, 2, 3]
    assert page is not None
    with pytest.raises(UnknownType):
        events_publish_select(game=game, type="league.nope", query=query, params=[1], now=now)
    assert Event.objects.count() == 3
