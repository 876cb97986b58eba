"""A final period's standings: stored once by the freeze, read by every later read of the period
(docs/api.md, "Finality").

The freeze (scoring/tournament_freezing.py, which owns the ledger the standings come from) hands
its ranked rows to `period_final_store`, inside the transaction that also publishes the
`tournament.period_final` event; the `TournamentPeriod` row it writes is what makes the period
`final` for every reader. From then on the reads here answer top, player and around from
PostgreSQL, never Redis (the period's keys expire TOURNAMENT_KEYS_TTL_AFTER_FINAL_S later).

The ranks and rewards are those of the freeze, the official result: the event carried them and a
studio paid them out. A player hidden or deleted later is left out of every read (they no longer
show), without moving anyone else's rank or reward; `total` counts the players shown.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from psycopg.types.json import Jsonb

from boards.gone import gone_players
from boards.models import Player
from common.db import copy_rows

from .models import Tournament, TournamentEntrant, TournamentPeriod, TournamentStanding
from .periods import Period


@dataclass(frozen=True)
class FinalRow:
    """One line of the standings as the freeze ranked it."""

    position: int
    rank: int
    player_id: str
    score: int
    attempts: int
    reward: Any


def period_final_store(
    *, tournament: Tournament, period: Period, entrants: int, rows: Iterable[FinalRow], now: datetime
) -> TournamentPeriod:
    """The period's `TournamentPeriod` row and its standings (COPY), in the caller's transaction,
    which must hold the tournament's row lock (`tournament_lock`) and have found the period not
    final."""
    final = TournamentPeriod.objects.create(
        tournament=tournament,
        index=period.index,
        starts_at=period.starts_at,
        ends_at=period.ends_at,
        entrants=entrants,
        finalized_at=now,
    )
    copy_rows(
        TournamentStanding._meta.db_table,
        ["period_id", "position", "rank", "player_id", "score", "attempts", "reward"],
        ((final.pk, r.position, r.rank, r.player_id, r.score, r.attempts, _json(r.reward)) for r in rows),
    )
    return final


def _json(value: Any) -> Any:
    return Jsonb(value) if value is not None else None


def tournament_lock(*, tournament_id: int) -> Tournament:
    """The tournament's row, locked until the transaction ends: one freezer at a time."""
    return Tournament.objects.select_for_update().select_related("game").get(pk=tournament_id)


def period_final_get(*, tournament: Tournament, index: int) -> TournamentPeriod | None:
    return TournamentPeriod.objects.filter(tournament=tournament, index=index).first()


def _shown(final: TournamentPeriod, game_id: int) -> QuerySet[TournamentStanding]:
    """The standings of the players still shown (not hidden, not deleted)."""
    gone = gone_players(game_id=game_id).values("player_id")
    return final.standings.exclude(player_id__in=gone)


def _names(game_id: int, player_ids: list[str]) -> dict[str, str]:
    found = Player.objects.filter(game_id=game_id, player_id__in=player_ids, display_name__isnull=False)
    return {player_id: name for player_id, name in found.values_list("player_id", "display_name") if name}


def _entries(game_id: int, rows: list[TournamentStanding]) -> list[dict[str, Any]]:
    names = _names(game_id, [r.player_id for r in rows])
    return [
        {
            "rank": r.rank,
            "player_id": r.player_id,
            "display_name": names.get(r.player_id),
            "score": r.score,
            "attempts": r.attempts,
            "reward": r.reward,
        }
        for r in rows
    ]


def final_top(*, tournament: Tournament, final: TournamentPeriod, n: int) -> list[dict[str, Any]]:
    rows = list(_shown(final, tournament.game_id).order_by("position")[:n])
    return _entries(tournament.game_id, rows)


def _gone(tournament: Tournament, player_id: str) -> bool:
    return (
        Player.objects.filter(game_id=tournament.game_id, player_id=player_id)
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .exists()
    )


def final_player(
    *, tournament: Tournament, final: TournamentPeriod, player_id: str, max_attempts: int | None
) -> dict[str, Any] | None:
    """The player's line (None: neither in the standings nor entered, or no longer shown); an
    entrant with no counted result has score and rank null."""
    if _gone(tournament, player_id):
        return None
    row = final.standings.filter(player_id=player_id).first()
    if (
        row is None
        and not TournamentEntrant.objects.filter(
            tournament=tournament, period=final.index, player_id=player_id
        ).exists()
    ):
        return None
    return {
        "player_id": player_id,
        "display_name": _names(tournament.game_id, [player_id]).get(player_id),
        "score": row.score if row is not None else None,
        "rank": row.rank if row is not None else None,
        "total": _shown(final, tournament.game_id).count(),
        "attempts": row.attempts if row is not None else 0,
        "max_attempts": max_attempts,
        "reward": row.reward if row is not None else None,
    }


def final_around(
    *, tournament: Tournament, final: TournamentPeriod, player_id: str, r: int
) -> list[dict[str, Any]] | None:
    """The 2r+1 lines around the player's (None: not in the standings, or no longer shown); near
    either end the window slides, as on a live board (boards/lua/ranking_lib.lua `around_slice`)."""
    if _gone(tournament, player_id):
        return None
    row = final.standings.filter(player_id=player_id).first()
    if row is None:
        return None
    shown = _shown(final, tournament.game_id)
    before = list(shown.filter(position__lt=row.position).order_by("-position")[: 2 * r])
    after = list(shown.filter(position__gt=row.position).order_by("position")[: 2 * r])
    take_before = min(len(before), r + max(0, r - len(after)))
    take_after = min(len(after), 2 * r - take_before)
    rows = [*reversed(before[:take_before]), row, *after[:take_after]]
    return _entries(tournament.game_id, rows)


def final_rewards(*, final: TournamentPeriod) -> list[dict[str, Any]]:
    """The players in a reward band, in display order (the `tournament.period_final` event)."""
    rows = final.standings.filter(reward__isnull=False).order_by("position")
    return [{"player_id": r.player_id, "rank": r.rank, "score": r.score, "reward": r.reward} for r in rows]
