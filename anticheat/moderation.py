"""Bans and revocations: the ledger changes first, then the boards are corrected from it."""

import time
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F, Sum

from scoring.corrections import CorrectionPaused, player_correct
from scoring.models import EventStatus, ScoreEvent, SeasonTotal
from seasons.models import Game

from .models import Ban


@dataclass(frozen=True)
class BanResult:
    player_id: str
    revoked: int
    boards_changed: int


def player_ban(*, game: Game, player_id: str, reason: str = "", revoke_since: datetime | None = None) -> BanResult:
    """Ban a player: their new results are rejected. With `revoke_since`, their accepted and pending
    results played since then are revoked (kept in the ledger, status `revoked`), their season
    totals reduced, and every board they were on corrected from what remains."""
    with transaction.atomic():
        try:
            with transaction.atomic():
                Ban.objects.create(game=game, player_id=player_id, reason=reason)
        except IntegrityError:
            pass  # already banned: banning is idempotent
        revoked = 0
        if revoke_since is not None:
            targets = ScoreEvent.objects.filter(
                game=game,
                player_id=player_id,
                played_at__gte=revoke_since,
                status__in=[EventStatus.ACCEPTED, EventStatus.PENDING_REVIEW],
            )
            list(targets.select_for_update().values_list("id", flat=True))  # lock them first
            lost = dict(
                targets.filter(status=EventStatus.ACCEPTED)
                .values("season_id")
                .annotate(points=Sum("points"))
                .values_list("season_id", "points")
            )
            revoked = targets.update(status=EventStatus.REVOKED, reason="banned")
            for season_id, points in lost.items():
                SeasonTotal.objects.filter(season_id=season_id, player_id=player_id).update(points=F("points") - points)
    changed = _correct(game, player_id) if revoked else 0
    return BanResult(player_id=player_id, revoked=revoked, boards_changed=changed)


def _correct(game: Game, player_id: str, attempts: int = 50) -> int:
    for _ in range(attempts):
        try:
            return player_correct(game=game, player_id=player_id)
        except CorrectionPaused:
            time.sleep(0.2)  # a rebuild is swapping keys in; it takes a moment
    raise CorrectionPaused(game.slug)
