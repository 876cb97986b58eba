"""Freezing a season: its final standings, from the ledger, into PostgreSQL for good.

A season freezes when its grace window ends (beat, `scoring.seasons_freeze`) or at once with
`end_season --grace-s 0`. The standings are computed from the ledger, the truth, including
results not yet on the boards and periods whose day and week boards have left Redis; that is
why this job sits with the ledger rather than in `boards`, which stores the rows
(`boards.standings.standings_store`), expires the season's keys after the commit, and answers
every later read of the season from them.

The members stream from the ledger into COPY, one board kind at a time, each board in display
order (`selectors.ledger_entries`): a season of millions of players freezes in memory that does
not grow with it.
"""

import logging
from collections.abc import Generator
from contextlib import closing
from datetime import datetime

from django.db import transaction

from boards.kinds import KINDS
from boards.standings import standings_store
from boards.tally import BoardEntry
from seasons.catalog import catalog_publish
from seasons.models import Season
from seasons.selectors import season_lock, seasons_to_freeze
from seasons.services import season_mark_frozen

from .selectors import ledger_entries, ledger_has_extra_boards

logger = logging.getLogger(__name__)


def season_freeze(*, season_id: int, now: datetime) -> int:
    """Freeze a season (idempotent). Returns the number of standing rows written (0 if it was
    frozen already).

    Locks the season row, so two freezers cannot both write standings. Side effect after commit:
    the season's Redis keys expire after SEASON_KEYS_TTL_AFTER_FREEZE_S.
    """
    with transaction.atomic():
        season = season_lock(season_id=season_id)
        if season.frozen_at is not None:
            return 0
        with closing(_season_entries(season)) as entries:  # its cursors close before the commit
            rows = standings_store(season=season, entries=entries)
        season_mark_frozen(season=season, now=now)
    catalog_publish(slug=season.game.slug)  # readers switch to the standings
    logger.info("season %s frozen: %d standing rows", season_id, rows)
    return rows


def _season_entries(season: Season) -> Generator[list[BoardEntry], None, None]:
    """Every board of the season, kind after kind, each board in display order."""
    extras = ledger_has_extra_boards(game=season.game, season_id=season.id)
    for kind in KINDS.values():
        with ledger_entries(
            game=season.game, kinds=[kind], season_id=season.id, ordered=True, interleaved=True, extras=extras
        ) as chunks:
            yield from chunks


def seasons_freeze_due(*, now: datetime) -> list[int]:
    """Freeze every season whose grace has ended; returns their ids."""
    due = seasons_to_freeze(now=now)
    for season_id in due:
        season_freeze(season_id=season_id, now=now)
    return due
