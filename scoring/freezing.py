"""Freezing a season: its final standings, from the ledger, into PostgreSQL for good.

A season freezes when its grace window ends (beat, `scoring.seasons_freeze`) or at once with
`end_season --grace-s 0`. The standings are computed from the ledger, the truth, including
results not yet on the boards and periods whose day and week boards have left Redis; that is
why this job sits with the ledger rather than in `boards`, which stores the rows
(`boards.standings.standings_load`), expires the season's keys after the commit, and answers
every later read of the season from them.

No member passes through Python: each board kind is one INSERT ... SELECT from the ledger's SQL
for it (`selectors.ledger_entries_sql`), ranked by window functions, into a table of the season's
own that is indexed and attached as its partition of the standings afterwards
(`boards.standings.standings_load`): the kinds ranked at once on connections of its own
(LOAD_CONNECTIONS) and the table indexed beside the freeze's transaction, which only attaches it.
A season of millions of players freezes in this process's memory, whatever its size.

The freeze's transaction also publishes the `season.frozen` event (docs/api.md, "Events out") with
the first 100 entries of the season's `all` board, global, as its standings now answer them.
"""

import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from boards.keys import GLOBAL
from boards.kinds import KINDS
from boards.selectors import BoardView, board_top
from boards.standings import LOAD_CONNECTIONS, standings_load
from events.services import events_publish
from events.types import SEASON_FROZEN
from seasons.catalog import catalog_publish
from seasons.models import Season
from seasons.selectors import season_lock, seasons_to_freeze
from seasons.services import season_mark_frozen

from .selectors import ledger_entries_sql, ledger_has_extra_boards, ledger_job_settings

logger = logging.getLogger(__name__)


def season_freeze(*, season_id: int, now: datetime) -> int:
    """Freeze a season (idempotent). Returns the number of standing rows written (0 if it was
    frozen already).

    Locks the season row, so two freezers cannot both write standings; attaching the season's
    standings locks FrozenStanding until the commit (`standings_load` says how). Publishes the
    `season.frozen` event in the same transaction. Side effect after commit: the season's Redis
    keys expire after SEASON_KEYS_TTL_AFTER_FREEZE_S.

    Its transaction the outermost, the standings are loaded and indexed on LOAD_CONNECTIONS
    connections of their own and only attached in it (`standings_load` says how that stays
    atomic); inside a caller's transaction, whose uncommitted rows those connections would not
    see, on this one alone.
    """
    connections = 1 if connection.in_atomic_block else LOAD_CONNECTIONS
    with transaction.atomic():
        season = season_lock(season_id=season_id)
        if season.frozen_at is not None:
            return 0
        ledger_job_settings()
        rows = standings_load(season=season, boards=_season_boards(season), connections=connections)
        season_mark_frozen(season=season, now=now)
        _frozen_event_publish(season=season, now=now)
    catalog_publish(slug=season.game.slug)  # readers switch to the standings
    logger.info("season %s frozen: %d standing rows", season_id, rows)
    return rows


FROZEN_TOP = 100  # entries of the all board, global, in the season.frozen event (docs/api.md, "Events out")


def _frozen_event_publish(*, season: Season, now: datetime) -> None:
    """`season.frozen` with the top of the `all` board, global, read from the standings just
    attached (visible to this transaction only, until it commits), as a reader will see them."""
    view = BoardView(game=season.game, season=season, board="all", region=GLOBAL, period=None)
    top = board_top(view=view, n=FROZEN_TOP)
    events_publish(game=season.game, type=SEASON_FROZEN, data={"season": season.id, "top": top}, now=now)


def _season_boards(season: Season) -> Iterator[tuple[str, list[Any]]]:
    """Every board of the season: one query per kind, by kind name (the order of the standings'
    position index, in which `standings_load` lays the rows out)."""
    extras = ledger_has_extra_boards(game=season.game, season_id=season.id)
    for kind in sorted(KINDS.values(), key=lambda kind: kind.name):
        yield ledger_entries_sql(game=season.game, kind=kind, season_id=season.id, extras=extras)


def seasons_freeze_due(*, now: datetime) -> list[int]:
    """Freeze every season whose grace has ended; returns their ids."""
    due = seasons_to_freeze(now=now)
    for season_id in due:
        season_freeze(season_id=season_id, now=now)
    return due
