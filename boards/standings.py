"""Final standings: a frozen season's boards, kept in PostgreSQL for good.

`standings_store` writes them (COPY) inside the caller's transaction; the freeze that decides
what they are lives with the ledger (scoring/freezing.py), since the ledger is the truth and old
day and week boards have left Redis by then. Once stored and committed, the season's keys get an
expiry (`season_keys_expire`); `season_archive` drops what is left of them. Reads of a frozen
season come from these rows (selectors.py).
"""

from collections.abc import Iterable
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
from .ranking import ranks_for
from .tally import BoardScores

STANDING_COLUMNS = ["season_id", "board", "region", "period", "position", "rank", "player_id", "score"]


def standings_store(*, season: Season, boards: Iterable[BoardScores]) -> int:
    """Write every board's final standings (display order, the game's tie rule) and return the
    number of rows. Call inside the transaction that marks the season frozen; the keys' expiry
    follows its commit."""
    codec = ScoreCodec(season.time_bits)
    rule = season.game.tie_rule
    ascending = season.game.ascending
    rows = 0
    for board in boards:
        ordered = sorted(board.scores.items(), key=lambda item: (-item[1], item[0]))
        stored = [codec.points(score) for _, score in ordered]
        ranks = ranks_for(stored, rule)
        shown = [codec.shown_points(p, ascending=ascending) for p in stored]
        ref = board.ref
        rows += copy_rows(
            FrozenStanding._meta.db_table,
            STANDING_COLUMNS,
            (
                (season.id, ref.board, ref.region, ref.period, position, ranks[position], player, shown[position])
                for position, (player, _) in enumerate(ordered)
            ),
        )
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
