"""A player's score on a tournament period's board, derived from their counted results (the
ledger's, given by the caller): what a rewrite of the board writes as an absolute value.

`best` and `sum` with `desc` (and `best` with `asc`) are applied incrementally by the season boards'
apply script (boards.py); `latest`, and `sum` with `asc`, are always written this way, and so is
every board a withdrawn result (revoked, withheld, refused for overflow) leaves. The rules are the
apply script's, so both ways give the same score:
- `best`: the best single result; among equal ones the earliest accepted (it reached it first).
- `sum`: the total; it was reached when the latest result with points was accepted (the earliest
  while every result has zero points).
- `latest`: the result with the latest `played_at`, then the latest accepted, then the highest
  ledger id: the ledger's order, so redeliveries and replays, which add no counted result, change
  nothing, and results applied out of order give the same score.
With `asc` the stored points are the codec's capacity minus the value, as on every lower-is-better
board.
"""

from datetime import datetime
from typing import NamedTuple

from boards.codec import ScoreCodec, reached_seconds
from boards.keys import epoch_micros

from .models import Order, Scoring, Tournament


class CountedResult(NamedTuple):
    """A result counted in a period, still accepted."""

    event_id: int
    points: int
    played_at: datetime
    accepted_at: datetime


def incremental(tournament: Tournament) -> bool:
    """Whether the apply script adds this tournament's results (else the board is rewritten)."""
    return tournament.scoring == Scoring.BEST or (tournament.scoring == Scoring.SUM and tournament.order == Order.DESC)


def period_score(
    *, tournament: Tournament, starts_at: datetime, time_bits: int, results: list[CountedResult]
) -> int | None:
    """The encoded score of a player with these counted results (None: no result, off the board;
    also None past the codec's capacity, which the apply script would refuse)."""
    return counted_score(
        scoring=tournament.scoring,
        ascending=tournament.order == Order.ASC,
        starts_at=starts_at,
        time_bits=time_bits,
        results=results,
    )


def counted_score(
    *, scoring: str, ascending: bool, starts_at: datetime, time_bits: int, results: list[CountedResult]
) -> int | None:
    """`period_score` by the rule's name (`best`, `sum`, `latest`): a league cohort's board uses the
    same rules (`best` and `sum`, higher is better)."""
    if not results:
        return None
    codec = ScoreCodec(time_bits)
    start_us = epoch_micros(starts_at)

    def reached(result: CountedResult) -> int:
        return reached_seconds(season_start_us=start_us, accepted_us=epoch_micros(result.accepted_at))

    if scoring == Scoring.LATEST:
        last = max(results, key=lambda r: (r.played_at, r.accepted_at, r.event_id))
        value, at = last.points, reached(last)
    elif scoring == Scoring.SUM:
        value = sum(r.points for r in results)
        positive = [reached(r) for r in results if r.points > 0]
        at = max(positive) if positive else min(reached(r) for r in results)
    else:
        value = min(r.points for r in results) if ascending else max(r.points for r in results)
        at = min(reached(r) for r in results if r.points == value)
    if value > codec.max_points:
        return None
    return codec.encode(points=codec.stored_points(value, ascending=ascending), reached_s=at)
