"""Freezing and archiving seasons: final standings into PostgreSQL, then the Redis keys expire.

A season freezes when its grace window ends (beat, `seasons.rotate`) or at once with
`end_season --grace-s 0`. Freezing writes every board's standings (rank by the game's tie rule,
player, score) in one transaction, computed from the ledger (the truth, including events not yet
on the boards); only after that commit do the season's Redis keys get an expiry. A frozen season's
reads come from these rows; once its keys are gone it is `archived`.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from boards.ranking import ranks_for
from leaderboard_site.db import copy_rows
from scoring import redis_boards
from scoring.encoding import ScoreCodec
from scoring.selectors import ledger_boards

from .models import FrozenStanding, Season

logger = logging.getLogger(__name__)


def season_freeze(*, season_id: int, now: datetime) -> int:
    """Freeze a season (idempotent). Returns the number of standing rows written.

    Locks the season row (select_for_update) so two freezers cannot both write standings.
    Side effect after commit: the season's Redis keys expire after SEASON_KEYS_TTL_AFTER_FREEZE_S.
    """
    with transaction.atomic():
        season = Season.objects.select_for_update().select_related("game").get(pk=season_id)
        if season.frozen_at is not None:
            return 0
        codec = ScoreCodec(season.time_bits)
        rule = season.game.tie_rule
        rows = 0
        for board in ledger_boards(game=season.game, season_id=season.id).values():
            ordered = sorted(board.scores.items(), key=lambda item: (-item[1], item[0]))
            stored = [codec.points(score) for _, score in ordered]
            ranks = ranks_for(stored, rule)
            points = [codec.shown_points(p, ascending=season.game.ascending) for p in stored]
            ref = board.ref
            rows += copy_rows(
                FrozenStanding._meta.db_table,
                ["season_id", "board", "region", "period", "position", "rank", "player_id", "score"],
                (
                    (season.id, ref.board, ref.region, ref.period, position, ranks[position], player, points[position])
                    for position, (player, _) in enumerate(ordered)
                ),
            )
        season.frozen_at = now
        season.save(update_fields=["frozen_at"])
        transaction.on_commit(lambda: _expire_keys(season), robust=True)
    logger.info("season %s frozen: %d standing rows", season_id, rows)
    return rows


def _expire_keys(season: Season) -> None:
    client = redis_boards.client()
    ttl = int(settings.SEASON_KEYS_TTL_AFTER_FREEZE_S)
    pipe = client.pipeline(transaction=False)
    for key in client.scan_iter(match=redis_boards.season_pattern(season.game.slug, season.id), count=1000):
        pipe.expire(key, ttl)
    pipe.execute()


def season_archive(*, season_id: int, now: datetime) -> bool:
    """Drop what is left of a frozen season's Redis keys (UNLINK: freed in the background)."""
    season = Season.objects.select_related("game").get(pk=season_id)
    if season.frozen_at is None or season.archived_at is not None:
        return False
    client = redis_boards.client()
    keys = list(client.scan_iter(match=redis_boards.season_pattern(season.game.slug, season.id), count=1000))
    for start in range(0, len(keys), 1000):
        client.unlink(*keys[start : start + 1000])
    Season.objects.filter(pk=season.pk, archived_at__isnull=True).update(archived_at=now)
    return True


def seasons_due(*, now: datetime) -> tuple[list[int], list[int]]:
    """Seasons whose grace has ended (to freeze) and frozen ones whose keys are due (to archive)."""
    to_freeze = [s.id for s in Season.objects.filter(frozen_at__isnull=True) if s.closes_at <= now]
    archive_before = now - timedelta(seconds=int(settings.SEASON_KEYS_TTL_AFTER_FREEZE_S))
    to_archive = list(
        Season.objects.filter(archived_at__isnull=True, frozen_at__lte=archive_before).values_list("id", flat=True)
    )
    return to_freeze, to_archive
