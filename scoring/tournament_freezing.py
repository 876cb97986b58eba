"""Finality of a tournament period: its standings frozen from the ledger, once (docs/api.md,
"Finality").

When a period's grace has ended (and TOURNAMENT_FREEZE_DELAY_S more: a result whose verdict was
decided just before the end may still be committing), beat's `scoring.tournaments_freeze` freezes
it: in one transaction holding the tournament's row lock, the standings are computed from the
ledger (the counted results still accepted, each player's score by the tournament's scoring, the
same `period_score` the live board is written with), ranked by the game's tie rule, stored with
each reward band attached (competitions/finals.py), and the `tournament.period_final` event is
published. A second freezer (two beat schedulers, a retried task) waits for the lock, finds the
period's row and does nothing. Every period freezes, an empty one too (its event lists no
rewards), oldest first.

The standings come from the ledger, not from the period's board: results accepted in the grace
and not applied yet count, and a board Redis lost changes nothing. Players hidden or deleted by
then are left out, as the live board leaves them out.
"""

import logging
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from redis import RedisError

from boards.codec import ScoreCodec
from boards.models import Player
from boards.ranking import Ranker
from boards.writer import boards_touched
from common.formats import iso
from competitions import keys
from competitions.boards import period_time_bits
from competitions.entry import COUNTED
from competitions.finals import FinalRow, final_rewards, period_final_get, period_final_store, tournament_lock
from competitions.models import Order, Tournament, TournamentEntrant
from competitions.periods import Period, period_number
from competitions.scores import CountedResult, period_score
from competitions.services import schedule_of
from competitions.standings import TournamentConf, conf_of
from events.services import events_publish
from events.types import TOURNAMENT_PERIOD_FINAL

from .ledger_partitions import played_between
from .models import EventStatus, TournamentResult

logger = logging.getLogger(__name__)
MAX_FREEZES_PER_RUN = 500  # periods one run freezes (a tournament catching up waits for the next run)


def _period_results(tournament: Tournament, period: Period) -> dict[str, list[CountedResult]]:
    """Each player's counted results in the period that are still accepted (its months only)."""
    rows = TournamentResult.objects.filter(
        tournament=tournament,
        period=period.index,
        verdict=COUNTED,
        event__status=EventStatus.ACCEPTED,
        event__played_at__range=played_between(period.starts_at, period.ends_at),
    ).values_list("player_id", "event_id", "event__points", "event__played_at", "event__accepted_at")
    found: dict[str, list[CountedResult]] = defaultdict(list)
    for player_id, event_id, points, played_at, accepted_at in rows.iterator(chunk_size=5000):
        found[player_id].append(CountedResult(event_id, points, played_at, accepted_at))
    return found


def period_standings(tournament: Tournament, period: Period) -> list[FinalRow]:
    """The period's final standings from the ledger, in display order, ranked by the game's tie
    rule, each with its reward band's reward."""
    results = _period_results(tournament, period)
    gone = set(
        Player.objects.filter(game_id=tournament.game_id, player_id__in=list(results))
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .values_list("player_id", flat=True)
    )
    time_bits = period_time_bits(tournament)
    scored: list[tuple[int, str]] = []
    for player_id, counted in results.items():
        if player_id in gone:
            continue
        encoded = period_score(tournament=tournament, starts_at=period.starts_at, time_bits=time_bits, results=counted)
        if encoded is not None:
            scored.append((encoded, player_id))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    conf = conf_of(tournament)
    return _ranked(conf, ScoreCodec(time_bits), scored, {p: len(c) for p, c in results.items()})


def _ranked(
    conf: TournamentConf, codec: ScoreCodec, scored: list[tuple[int, str]], attempts: dict[str, int]
) -> list[FinalRow]:
    ranker = Ranker(conf.tie_rule)
    ascending = conf.order == Order.ASC
    rows = []
    for position, (encoded, player_id) in enumerate(scored):
        stored = codec.points(encoded)
        rank = ranker.rank(stored)
        shown = codec.shown_points(stored, ascending=ascending)
        rows.append(FinalRow(position, rank, player_id, shown, attempts[player_id], conf.reward(rank)))
    return rows


def tournament_period_freeze(*, tournament_id: int, index: int, now: datetime) -> bool:
    """Freeze period `index` of the tournament (idempotent): False when it was final already, or
    its grace has not ended. Publishes `tournament.period_final` in the same transaction."""
    with transaction.atomic():
        tournament = tournament_lock(tournament_id=tournament_id)
        period = period_number(schedule_of(tournament), index)
        if period is None or period.closes_at > now or period_final_get(tournament=tournament, index=index):
            return False
        rows = period_standings(tournament, period)
        entrants = TournamentEntrant.objects.filter(tournament=tournament, period=index).count()
        final = period_final_store(tournament=tournament, period=period, entrants=entrants, rows=rows, now=now)
        events_publish(game=tournament.game, type=TOURNAMENT_PERIOD_FINAL, data=_event(tournament, final), now=now)
    try:  # the live connections of the period learn it is final at the publisher's next tick
        boards_touched([keys.board_key(tournament.game.slug, tournament.slug, index)])
    except RedisError:
        logger.warning("tournament %s period %d final, its live connections not told (Redis)", tournament, index)
    logger.info("tournament %s period %d final: %d players, %d entrants", tournament, index, len(rows), entrants)
    return True


def _event(tournament: Tournament, final: Any) -> dict[str, Any]:
    return {
        "tournament": tournament.slug,
        "period": final.index,
        "starts_at": iso(final.starts_at),
        "ends_at": iso(final.ends_at),
        "entrants": final.entrants,
        "rewards": final_rewards(final=final),
    }


def periods_to_freeze(*, now: datetime, limit: int = MAX_FREEZES_PER_RUN) -> list[tuple[int, int]]:
    """(tournament id, period index) of the periods whose grace (and the freeze's delay) has ended
    and that are not final, oldest first per tournament, at most `limit`."""
    cutoff = now - timedelta(seconds=settings.TOURNAMENT_FREEZE_DELAY_S)
    due: list[tuple[int, int]] = []
    found = Tournament.objects.filter(starts_at__lte=cutoff).annotate(last_final=Max("periods__index"))
    for tournament in found.order_by("pk"):
        schedule = schedule_of(tournament)
        index = (tournament.last_final or 0) + 1
        while len(due) < limit:
            period = period_number(schedule, index)
            if period is None or period.closes_at > cutoff:
                break
            due.append((tournament.pk, index))
            index += 1
    return due


def tournament_periods_freeze_due(*, now: datetime) -> int:
    """Freeze every period due (`periods_to_freeze`); returns how many this call froze."""
    return sum(
        tournament_period_freeze(tournament_id=tournament_id, index=index, now=now)
        for tournament_id, index in periods_to_freeze(now=now)
    )
