"""Test helpers of the boards app: results put straight onto the boards through the board writer
(no ledger, no submission), players' names and flags, and the board page's periods."""

import itertools
from datetime import datetime, timedelta

from django.utils import timezone

from seasons.models import Game, Season
from seasons.periods import BadPeriod, utc_date
from seasons.selectors import season_containing, seasons_of

from .kinds import KINDS
from .models import Player
from .writer import ApplyReport, EventRow, events_apply, names_store

_event_ids = itertools.count(10**12)  # far from the ledger's ids, unique in a test process


def season_of(game: Game, played_at: datetime) -> Season:
    season = season_containing(seasons=seasons_of(game=game), played_at=played_at)
    assert season is not None, f"{played_at} is in no season of {game.slug}"
    return season


def record(
    game: Game,
    player_id: str,
    points: int,
    *,
    played_at: datetime | None = None,
    accepted_at: datetime | None = None,
    region: str | None = None,
    extra_boards: tuple[str, ...] = (),
    name: str | None = None,
) -> ApplyReport:
    """One result of `player_id` onto every board it counts on, as the worker would apply it."""
    accepted_at = accepted_at or timezone.now()
    played_at = played_at or accepted_at
    if name is not None:
        Player.objects.update_or_create(game=game, player_id=player_id, defaults={"display_name": name})
        names_store(game=game.slug, names={player_id: name})
    row = EventRow(
        id=next(_event_ids),
        season_id=season_of(game, played_at).id,
        player_id=player_id,
        points=points,
        accepted_at=accepted_at,
        day=utc_date(played_at),
        region=region,
        extra_boards=extra_boards,
    )
    return events_apply(events=[row], dedup_ttl_s=3600)


def record_many(game: Game, rows: list[tuple[str, int]], *, played_at: datetime, first_accept: datetime) -> None:
    """Results in order, each accepted one second after the one before (so "first to reach"
    follows the list's order)."""
    for i, (player_id, points) in enumerate(rows):
        record(game, player_id, points, played_at=played_at, accepted_at=first_accept + timedelta(seconds=i))


def period_misfits(board: str, period: str | None) -> bool:
    """Whether a well-formed `period` does not fit the board kind (a day on `weekly`, any period on
    `all`): the API's 400 `invalid`. The OpenAPI document gives the period one schema for every
    board (a JSON Schema cannot tie one parameter's format to another's value), so a request
    generated from it alone may pair them wrongly; the schema tests allow exactly that 400."""
    if period is None:
        return False
    kind = KINDS.get(board)
    if kind is None:
        return False
    try:
        kind.period_checked(period)
    except BadPeriod:
        return True
    return False


def ids_repeated(ids: str | None) -> bool:
    """Whether a `players?ids=` value names an id twice: the API's 400 `invalid`, which the OpenAPI
    document cannot state (its pattern says what each id is, not that they differ)."""
    if ids is None:
        return False
    parts = ids.split(",")
    return len(set(parts)) != len(parts)
