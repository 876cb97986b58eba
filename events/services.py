"""Events out, the writes: publishing an event in the caller's transaction, numbering committed
events for the feed, webhooks, redelivery and the prune.

Publishing is one INSERT of the event and one of its deliveries (one per webhook of the game that
takes its type), both in the caller's transaction: an event exists exactly when what it reports
committed. Its feed id is given after the commit, by `events_number`: the game's GameFeed row lock
makes that one step at a time per game, so feed ids commit in their own order, whatever order the
publishing transactions commit in, and a reader paging by id never skips one. The feed read, the
dispatcher and (through them) every reader number what has committed before they read.
"""

import json
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from seasons.models import Game

from .models import Delivery, DeliveryAttempt, DeliveryStatus, Event, GameFeed, Webhook
from .selectors import EventPage, events_page
from .types import EVENT_TYPES, UnknownType

_EVENT = Event._meta.db_table
_DELIVERY = Delivery._meta.db_table
_WEBHOOK = Webhook._meta.db_table
_FEED = GameFeed._meta.db_table
_ATTEMPT = DeliveryAttempt._meta.db_table


def events_publish(*, game: Game, type: str, data: Mapping[str, Any], now: datetime | None = None) -> int:
    """Publish one event of `game` (call it inside the transaction of the change it reports).
    Returns its primary key (its feed id comes after the commit). Side effects: a pending delivery
    for each webhook of the game that takes `type`; no lock beyond the rows it inserts."""
    [pk] = events_publish_many(game=game, type=type, items=[data], now=now)
    return pk


def publish(game: Game, type: str, data: Mapping[str, Any]) -> int:
    """`events_publish` by position: `publish(game, "tournament.period_final", {...})` in the
    transaction that finishes the period."""
    return events_publish(game=game, type=type, data=data)


def events_publish_many(
    *, game: Game, type: str, items: Sequence[Mapping[str, Any]], now: datetime | None = None
) -> list[int]:
    """Publish several events of one type and game at once, in the caller's transaction (or in one
    of their own when there is none): two statements, however many events and webhooks."""
    if type not in EVENT_TYPES:
        raise UnknownType(f"{type!r} is not an event type")
    if not items:
        return []
    now = now or timezone.now()
    texts = [json.dumps(item, separators=(",", ":"), ensure_ascii=False) for item in items]
    deadline = now + timedelta(seconds=float(settings.WEBHOOK_RETRY_FOR_S))
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_EVENT} (game_id, type, data, created_at) "
            "SELECT %s, %s, d.data, %s FROM unnest(%s::text[]) WITH ORDINALITY AS d(data, n) ORDER BY d.n "
            "RETURNING id",
            [game.id, type, now, texts],
        )
        ids = sorted(row[0] for row in cursor.fetchall())
        cursor.execute(
            f"INSERT INTO {_DELIVERY} (event_id, webhook_id, status, attempts, next_attempt_at, deadline_at, "
            "created_at, last_error) "
            f"SELECT e.id, w.id, %s, 0, %s, %s, %s, '' FROM unnest(%s::bigint[]) AS e(id) CROSS JOIN {_WEBHOOK} w "
            "WHERE w.game_id = %s AND (cardinality(w.types) = 0 OR %s = ANY(w.types))",
            [DeliveryStatus.PENDING.value, now, deadline, now, ids, game.id, type],
        )
    return ids


def events_publish_select(
    *, game: Game, type: str, query: str, params: Sequence[Any], now: datetime | None = None
) -> int:
    """Publish one event of `type` for each row of `query`, in the caller's transaction: `query` is
    a SELECT of two columns, the event's data (its JSON text, as it is to be sent) and its place in
    the publishing order. Returns how many were published.

    For events PostgreSQL builds from what the caller's transaction has just written (a league's
    `league.cohort_final`, from the standings): their text never travels to this process and back,
    and one statement writes them and their deliveries. Their ids follow the order column, as
    `events_publish_many`'s follow its items."""
    if type not in EVENT_TYPES:
        raise UnknownType(f"{type!r} is not an event type")
    now = now or timezone.now()
    deadline = now + timedelta(seconds=float(settings.WEBHOOK_RETRY_FOR_S))
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        cursor.execute(
            f"WITH published AS (INSERT INTO {_EVENT} (game_id, type, data, created_at) "
            f"SELECT %s, %s, q.data, %s FROM ({query}) AS q(data, n) ORDER BY q.n RETURNING id), "
            f"delivered AS (INSERT INTO {_DELIVERY} (event_id, webhook_id, status, attempts, next_attempt_at, "
            "deadline_at, created_at, last_error) "
            f"SELECT e.id, w.id, %s, 0, %s, %s, %s, '' FROM published e CROSS JOIN {_WEBHOOK} w "
            "WHERE w.game_id = %s AND (cardinality(w.types) = 0 OR %s = ANY(w.types))) "
            "SELECT count(*) FROM published",
            [game.id, type, now, *params, DeliveryStatus.PENDING.value, now, deadline, now, game.id, type],
        )
        return int(cursor.fetchone()[0])


def events_number(*, game_id: int) -> int:
    """Give the game's committed events that have no feed id one, in publishing order, after the
    game's last. Returns how many.

    Locks the game's GameFeed row (SKIP LOCKED: while another numbering of the game runs, this one
    does nothing and returns 0; that one's ids commit first). Events of transactions still open are
    invisible here and get later ids once they commit: the feed's ids commit in increasing order.
    """
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {_EVENT} WHERE game_id = %s AND feed_id IS NULL)", [game_id])
        if not cursor.fetchone()[0]:
            return 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {_FEED} (game_id, last_id) VALUES (%s, 0) ON CONFLICT DO NOTHING", [game_id])
        cursor.execute(f"SELECT last_id FROM {_FEED} WHERE game_id = %s FOR UPDATE SKIP LOCKED", [game_id])
        row = cursor.fetchone()
        if row is None:
            return 0
        cursor.execute(
            f"WITH todo AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM {_EVENT} "
            "WHERE game_id = %s AND feed_id IS NULL) "
            f"UPDATE {_EVENT} e SET feed_id = %s + todo.n FROM todo WHERE e.id = todo.id",
            [game_id, row[0]],
        )
        numbered = cursor.rowcount
        cursor.execute(f"UPDATE {_FEED} SET last_id = last_id + %s WHERE game_id = %s", [numbered, game_id])
    return int(numbered)


def events_feed(*, game: Game, after: int, limit: int, types: Sequence[str] | None, now: datetime) -> EventPage:
    """The feed's page (selectors.events_page) once the game's committed events are numbered: an
    event is in the feed as soon as its transaction has committed."""
    events_number(game_id=game.id)
    return events_page(game=game, after=after, limit=limit, types=types, now=now)


def events_number_all() -> int:
    """`events_number` for every game with events to number (the dispatcher, before each claim)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT game_id FROM {_EVENT} WHERE feed_id IS NULL")
        games = [row[0] for row in cursor.fetchall()]
    return sum(events_number(game_id=game_id) for game_id in games)


def webhook_create(*, game: Game, url: str, types: Sequence[str] = ()) -> Webhook:
    """A webhook of `game`: every event of `types` (all when empty) published from now on is POSTed
    to `url`. ValueError for a URL that is not absolute http(s), UnknownType for a type."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an absolute http:// or https:// URL")
    unknown = [t for t in types if t not in EVENT_TYPES]
    if unknown:
        raise UnknownType(f"{unknown[0]!r} is not an event type (known: {', '.join(EVENT_TYPES)})")
    secret = secrets.token_urlsafe(32)
    return Webhook.objects.create(game=game, url=url, secret=secret, types=list(dict.fromkeys(types)))


def webhook_delete(*, webhook_id: int) -> bool:
    """Delete a webhook with its deliveries and their attempts (a try in flight is not recorded).
    False when there is no such webhook."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {_WEBHOOK} WHERE id = %s FOR UPDATE", [webhook_id])
        if cursor.fetchone() is None:
            return False
        cursor.execute(
            f"DELETE FROM {_ATTEMPT} WHERE delivery_id IN (SELECT id FROM {_DELIVERY} WHERE webhook_id = %s)",
            [webhook_id],
        )
        cursor.execute(f"DELETE FROM {_DELIVERY} WHERE webhook_id = %s", [webhook_id])
        cursor.execute(f"DELETE FROM {_WEBHOOK} WHERE id = %s", [webhook_id])
    return True


def deliveries_redeliver(*, delivery_ids: Sequence[int], now: datetime) -> int:
    """Send failed deliveries again: each pending from now, its tries counted anew, due at once and
    retried for another WEBHOOK_RETRY_FOR_S. Deliveries that are not failed are left alone.
    Returns how many were failed and are pending again."""
    deadline = now + timedelta(seconds=float(settings.WEBHOOK_RETRY_FOR_S))
    return Delivery.objects.filter(id__in=list(delivery_ids), status=DeliveryStatus.FAILED).update(
        status=DeliveryStatus.PENDING, attempts=0, next_attempt_at=now, deadline_at=deadline, last_error=""
    )


def deliveries_redeliver_failed(*, webhook_ids: Sequence[int], now: datetime) -> int:
    """`deliveries_redeliver` for every failed delivery of these webhooks (after an outage)."""
    failed = Delivery.objects.filter(webhook_id__in=list(webhook_ids), status=DeliveryStatus.FAILED)
    return deliveries_redeliver(delivery_ids=list(failed.values_list("id", flat=True)), now=now)


PRUNE_BATCH = 5000


def events_prune(*, now: datetime, batch: int = PRUNE_BATCH) -> int:
    """Delete the events older than EVENTS_KEEP_DAYS with their deliveries and attempts, `batch`
    events per transaction (no long lock, no big undo). Returns how many events went."""
    cutoff = now - timedelta(days=int(settings.EVENTS_KEEP_DAYS))
    gone = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id FROM {_EVENT} WHERE created_at < %s ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED",
                [cutoff, batch],
            )
            ids = [row[0] for row in cursor.fetchall()]
            if ids:
                cursor.execute(
                    f"DELETE FROM {_ATTEMPT} WHERE delivery_id IN "
                    f"(SELECT id FROM {_DELIVERY} WHERE event_id = ANY(%s))",
                    [ids],
                )
                cursor.execute(f"DELETE FROM {_DELIVERY} WHERE event_id = ANY(%s)", [ids])
                cursor.execute(f"DELETE FROM {_EVENT} WHERE id = ANY(%s)", [ids])
        gone += len(ids)
        if len(ids) < batch:
            return gone
