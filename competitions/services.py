"""Tournament writes: create or replace (the signed PUT), end, and entry (docs/api.md, "Tournaments").

Entry is exact under any concurrency: the seat is taken by one Lua call that counts and writes
(counters.py), then the `TournamentEntrant` row is written; a request whose row fails gives its
seat back. Never a count in Python followed by a write.
"""

from dataclasses import asdict, dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from rest_framework.exceptions import ValidationError

from seasons.models import Game

from .counters import seat_give_back, seat_take
from .models import Tournament, TournamentEntrant
from .periods import Period, Schedule, first_period, period_to_enter
from .problems import TOURNAMENT_FULL, TOURNAMENT_OVER, TOURNAMENT_STARTED
from .validation import TournamentIn

# What may change once the first period has started (an earlier or later `ends_at` too).
CHANGEABLE_AFTER_START = {"title", "description", "metadata", "ends_at"}


def schedule_of(tournament: Tournament) -> Schedule:
    return Schedule(
        starts_at=tournament.starts_at,
        ends_at=tournament.ends_at,
        duration_s=tournament.duration_s,
        reset=tournament.reset,
        grace_s=tournament.grace_s,
        ended_at=tournament.ended_at,
    )


def config_of(tournament: Tournament) -> TournamentIn:
    return TournamentIn(**{name: getattr(tournament, name) for name in TournamentIn.__dataclass_fields__})


def _window_check(config: TournamentIn, *, ends_at_changed: bool, now: datetime) -> None:
    """400 for an `ends_at` before now (when it is set or changed) and for a window that holds no
    period."""
    if ends_at_changed and config.ends_at is not None and config.ends_at < now:
        raise ValidationError({"ends_at": ["ends_at is before now."]})
    schedule = Schedule(config.starts_at, config.ends_at, config.duration_s, config.reset, config.grace_s)
    if first_period(schedule) is None:
        raise ValidationError({"ends_at": ["The window holds no period: ends_at is before the first period starts."]})


@dataclass(frozen=True)
class PutOutcome:
    tournament: Tournament
    created: bool


def tournament_change_check(*, current: Tournament | None, config: TournamentIn, now: datetime) -> set[str]:
    """The fields `config` changes in `current` (all of them for a new tournament), or the refusal:
    409 `tournament_started` for a change other than title, description, metadata and ends_at
    once the first period has started; 400 for an ends_at before now or a window without a period."""
    if current is None:
        _window_check(config, ends_at_changed=True, now=now)
        return set(TournamentIn.__dataclass_fields__)
    old = config_of(current)
    changed = {name for name in TournamentIn.__dataclass_fields__ if getattr(old, name) != getattr(config, name)}
    if not changed:
        return changed
    first = first_period(schedule_of(current))
    frozen = changed - CHANGEABLE_AFTER_START
    if first is not None and first.starts_at <= now and frozen:
        raise TOURNAMENT_STARTED(f"The first period has started; these cannot change now: {', '.join(sorted(frozen))}.")
    _window_check(config, ends_at_changed="ends_at" in changed, now=now)
    return changed


def tournament_put(*, game: Game, slug: str, config: TournamentIn, now: datetime) -> PutOutcome:
    """Create the tournament (201), or answer the same configuration again (200), or replace it
    before its first period starts (200). After that only title, description, metadata and ends_at
    may change (`tournament_change_check`). Locks the tournament's row."""
    with transaction.atomic():
        current = Tournament.objects.select_for_update().filter(game=game, slug=slug).first()
        changed = tournament_change_check(current=current, config=config, now=now)
        if current is None:
            created = Tournament(game=game, slug=slug, created_at=now, **asdict(config))
            try:
                with transaction.atomic():
                    created.save()
            except IntegrityError:  # a concurrent PUT created it first: answer against that one
                return tournament_put(game=game, slug=slug, config=config, now=now)
            return PutOutcome(created, True)
        for name in changed:
            setattr(current, name, getattr(config, name))
        if changed:
            current.save()
        return PutOutcome(current, False)


def tournament_end(*, tournament: Tournament, now: datetime) -> Tournament:
    """End the tournament now: the current period ends (its grace then runs) and no later period
    starts. Ending it again changes nothing. Locks the tournament's row."""
    with transaction.atomic():
        current = Tournament.objects.select_for_update().get(pk=tournament.pk)
        if current.ended_at is None:
            current.ended_at = now
            current.save(update_fields=["ended_at", "updated_at"])
    return current


@dataclass(frozen=True)
class JoinOutcome:
    period: Period
    entered: bool  # False: the player was in already


def entrant_join(*, tournament: Tournament, player_id: str, now: datetime) -> JoinOutcome:
    """Enter the player in the active period, or between periods in the next one: 409
    `tournament_over` after the last, `tournament_full` when the period has `max_entrants`. The
    seat is decided in one Lua call, then the row is written (given back if that fails)."""
    period = period_to_enter(schedule_of(tournament), now)
    if period is None:
        raise TOURNAMENT_OVER("The tournament's last period has ended.")
    taken = seat_take(tournament=tournament, period=period, player_id=player_id)
    if taken < 0:
        raise TOURNAMENT_FULL(f"Period {period.index} has its {tournament.max_entrants} entrants.")
    try:
        _, created = TournamentEntrant.objects.get_or_create(
            tournament=tournament, period=period.index, player_id=player_id, defaults={"joined_at": now}
        )
    except BaseException:
        if taken == 1:
            seat_give_back(tournament=tournament, period=period, player_ids=[player_id])
        raise
    return JoinOutcome(period, created)
