"""Events out, the reads: a page of the feed, an event's body as the feed and webhooks show it,
and what the metrics and the admin show of the deliveries."""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection

from common.formats import iso
from seasons.models import Game

from .models import Delivery, DeliveryStatus, Event, Webhook

_EVENT = Event._meta.db_table
_DELIVERY = Delivery._meta.db_table
_WEBHOOK = Webhook._meta.db_table


def event_view(*, feed_id: int, type: str, game: str, created_at: datetime, data: str) -> dict[str, Any]:
    """An event as the feed lists it and a webhook receives it: `{"id", "type", "game", "created_at",
    "data"}` (`data` as published, its keys in their order). The one place an event is put together."""
    return {"id": feed_id, "type": type, "game": game, "created_at": iso(created_at), "data": json.loads(data)}


def event_body(*, feed_id: int, type: str, game: str, created_at: datetime, data: str) -> bytes:
    """The bytes a webhook receives: `event_view` as compact JSON (UTF-8)."""
    view = event_view(feed_id=feed_id, type=type, game=game, created_at=created_at, data=data)
    return json.dumps(view, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class EventPage:
    events: list[dict[str, Any]]
    next: int


def events_page(*, game: Game, after: int, limit: int, types: Sequence[str] | None, now: datetime) -> EventPage:
    """The game's numbered events of the last EVENTS_KEEP_DAYS days after feed id `after`, in id
    order, at most `limit`, of `types` only when given; `next` is the last id listed (`after` when
    none is). Through the unique (game, feed_id) index."""
    rows = Event.objects.filter(
        game_id=game.id,
        feed_id__gt=after,
        created_at__gte=now - timedelta(days=int(settings.EVENTS_KEEP_DAYS)),
    )
    if types:
        rows = rows.filter(type__in=list(types))
    found = list(rows.order_by("feed_id").values_list("feed_id", "type", "created_at", "data")[:limit])
    events = [
        event_view(feed_id=int(feed_id or 0), type=kind, game=game.slug, created_at=created_at, data=data)
        for feed_id, kind, created_at, data in found
    ]
    return EventPage(events=events, next=events[-1]["id"] if events else after)


@dataclass(frozen=True)
class WebhookBacklog:
    webhook_id: int
    pending: int
    oldest_age_s: float


def webhook_backlogs(*, now: datetime) -> list[WebhookBacklog]:
    """For each webhook: its pending deliveries and how long ago the oldest one's event was
    published (0 with none: the metrics' oldest undelivered age). Through the partial index of
    pending deliveries."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT w.id, count(d.id), min(d.created_at) FROM {_WEBHOOK} w "
            f"LEFT JOIN {_DELIVERY} d ON d.webhook_id = w.id AND d.status = %s GROUP BY w.id ORDER BY w.id",
            [DeliveryStatus.PENDING.value],
        )
        rows = cursor.fetchall()
    return [
        WebhookBacklog(
            webhook_id=w, pending=int(n), oldest_age_s=max(0.0, (now - oldest).total_seconds()) if oldest else 0.0
        )
        for w, n, oldest in rows
    ]
