"""Final standings: a frozen season's boards, kept in PostgreSQL for good.

`standings_store` writes them (COPY) inside the caller's transaction, from the boards' members
streamed in display order: positions and ranks (the game's tie rule, ranking.py) are counted as
the rows go by, so a board of millions is never held whole. The freeze that decides what they are
lives with the ledger (scoring/freezing.py), since the ledger is the truth and old day and week
boards have left Redis by then. Once stored and committed, the season's keys get an expiry
(`season_keys_expire`); `season_archive` drops what is left of them. Reads of a frozen season come
from these rows (selectors.py).
"""

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.conf import settings
from django.db import transaction

from common.db import copy_rows
from common.redis import client
from seasons.models import Season
from seasons.services import season_mark_archived

from . import keys
from .codec import ScoreCodec
from .models import FrozenStanding
from .ranking import Ranker
from .tally import BoardEntry

STANDING_COLUMNS = ["season_id", "board", "region", "period", "position", "rank", "player_id", "score"]


class OutOfOrder(ValueError):
    """Standings were handed a board's members out of display order: their ranks would be wrong."""


def standings_store(*, season: Season, entries: Iterable[Sequence[BoardEntry]]) -> int:
    """Write the final standings of the season's boards and return the number of rows.

    `entries` streams every board's members in chunks, board after board, each board in display
    order: score descending, then player id by code point (`ledger_entries(ordered=True)`, or
    `tally.board_entries` for boards in memory); each chunk is one COPY. Call inside the
    transaction that marks the season frozen; the keys' expiry follows its commit."""
    codec = ScoreCodec(season.time_bits)
    bits, capacity = codec.time_bits, codec.max_points
    rule = season.game.tie_rule
    ascending = season.game.ascending
    season_id = season.id
    board: tuple[str, str, str] | None = None
    ranker = Ranker(rule)
    position = 0
    previous = 0
    rows = 0
    for chunk in entries:
        out = []
        for kind, _, region, period, player, score, _ in chunk:
            if board is None or period != board[2] or region != board[1] or kind != board[0]:
                board = (kind, region, period)
                ranker = Ranker(rule)
                position = 0
            elif score > previous:
                raise OutOfOrder(f"{player} on {kind} {region} {period}: a higher score after a lower one")
            previous = score
            stored = score >> bits
            shown = capacity - stored if ascending else stored
            out.append((season_id, kind, region, period, position, ranker.rank(stored), player, shown))
            position += 1
        rows += copy_rows(FrozenStanding._meta.db_table, STANDING_COLUMNS, out)
    transaction.on_commit(lambda: season_keys_expire(season=season), robust=True)
    return rows


def season_keys_expire(*, season: Season) -> None:
    """Give every Redis key of a frozen season an expiry (SEASON_KEYS_TTL_AFTER_FREEZE_S)."""
    redis = client()
    ttl = int(settings.SEASON_KEYS_TTL_AFTER_FREEZE_S)
    pipe = redis.pipeline(transaction=False)
    for key in redis.scan_iter(match=keys.season_pattern(season.game.slug, season.id), count=1000):
        pipe.expire(key, ttl)
    pipe.execute()


def season_archive(*, season: Season, now: datetime) -> bool:
    """Drop what is left of a frozen season's Redis keys (UNLINK: freed in the background); the
    season is `archived` from then on. False when it is not frozen or already archived."""
    if season.frozen_at is None or season.archived_at is not None:
        return False
    redis = client()
    found = list(redis.scan_iter(match=keys.season_pattern(season.game.slug, season.id), count=1000))
    for start in range(0, len(found), 1000):
        redis.unlink(*found[start : start + 1000])
    return season_mark_archived(season_id=season.id, now=now)


def standings_count(*, season: Season) -> int:
    return FrozenStanding.objects.filter(season=season).count()
