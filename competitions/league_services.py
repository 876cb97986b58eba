"""League writes: create or replace (the signed PUT) (docs/api.md, "Leagues").

201 when created; 200 when the same configuration is sent again or, before the first period
starts, when a new one replaces it; after that only `title` may change (409 `league_started`).
"""

from dataclasses import asdict, dataclass
from datetime import datetime

from django.db import IntegrityError, transaction

from seasons.models import Game

from .league_models import League
from .league_periods import schedule_of
from .league_problems import LEAGUE_STARTED
from .league_validation import LeagueIn
from .periods import first_period

CHANGEABLE_AFTER_START = {"title"}


def league_config_of(league: League) -> LeagueIn:
    return LeagueIn(**{name: getattr(league, name) for name in LeagueIn.__dataclass_fields__})


def league_started(league: League, now: datetime) -> bool:
    first = first_period(schedule_of(league))
    return first is not None and first.starts_at <= now


def league_change_check(*, current: League | None, config: LeagueIn, now: datetime) -> set[str]:
    """The fields `config` changes in `current` (all of them for a new league), or the refusal:
    409 `league_started` for a change other than the title once the first period has started."""
    if current is None:
        return set(LeagueIn.__dataclass_fields__)
    old = league_config_of(current)
    changed = {name for name in LeagueIn.__dataclass_fields__ if getattr(old, name) != getattr(config, name)}
    frozen = changed - CHANGEABLE_AFTER_START
    if frozen and league_started(current, now):
        raise LEAGUE_STARTED(f"The first period has started; these cannot change now: {', '.join(sorted(frozen))}.")
    return changed


@dataclass(frozen=True)
class LeaguePutOutcome:
    league: League
    created: bool


def league_put(*, game: Game, slug: str, config: LeagueIn, now: datetime) -> LeaguePutOutcome:
    """Create the league (201), answer the same configuration again (200), or replace it before
    its first period starts (200); after that only the title may change. Locks the league's row."""
    with transaction.atomic():
        current = League.objects.select_for_update().filter(game=game, slug=slug).first()
        changed = league_change_check(current=current, config=config, now=now)
        if current is None:
            created = League(game=game, slug=slug, created_at=now, **asdict(config))
            try:
                with transaction.atomic():
                    created.save()
            except IntegrityError:  # a concurrent PUT created it first: answer against that one
                return league_put(game=game, slug=slug, config=config, now=now)
            return LeaguePutOutcome(created, True)
        for name in changed:
            setattr(current, name, getattr(config, name))
        if changed:
            current.save()
        return LeaguePutOutcome(current, False)
