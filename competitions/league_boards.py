"""A league cohort's board as the board writer needs it (boards/writer.py `CompetitionBoard`): its
key and hash tag (one per cohort, so a large league's cohorts spread over a cluster's slots), its
score codec and its kind. `sum` and `best` (higher is better) are both added by the season boards'
apply script: scoring's worker passes these boards with the events that count on them."""

import time
from collections.abc import Callable

from django.utils import timezone

from boards.ranking import needs_distinct_points
from boards.writer import CompetitionBoard
from seasons.services import time_bits_for_window

from . import league_keys as keys
from .league_assign import keys_expire_at
from .league_keys import cohort_tag
from .league_models import League, LeagueCohort, LeagueScoring
from .league_periods import schedule_of
from .periods import Period, periods_open


def cohort_time_bits(period: Period) -> int:
    """Bits of the reach second on a cohort's board: the period and its grace fit."""
    return time_bits_for_window(int((period.closes_at - period.starts_at).total_seconds()))


def cohort_board(*, league: League, period: Period, division: int, number: int) -> CompetitionBoard:
    return cohort_boards_of_period(league=league, period=period)(division, number)


def cohort_boards_of_period(*, league: League, period: Period) -> Callable[[int, int], CompetitionBoard]:
    """A maker of the period's cohort boards by (division, number): what they share is worked out
    once (a worker's batch touches as many cohorts as it has players)."""
    game = league.game.slug
    time_bits = cohort_time_bits(period)
    best = league.scoring == LeagueScoring.BEST
    dense = needs_distinct_points(league.game.tie_rule)
    ttl_s = max(60, keys_expire_at(period) - int(time.time()))

    def board(division: int, number: int) -> CompetitionBoard:
        return CompetitionBoard(
            game=game,
            key=keys.cohort_board_key(game, league.slug, period.index, division, number),
            tag=keys.cohort_tag(game, league.slug, period.index, division, number),
            starts_at=period.starts_at,
            time_bits=time_bits,
            best=best,
            ascending=False,
            dense=dense,
            ttl_s=ttl_s,
        )

    return board


def cohort_id(*, period: int, division_name: str, number: int) -> str:
    """A cohort's public id: `{period}-{division}-{number}` (`12-silver-3`)."""
    return f"{period}-{division_name}-{number}"


def cohort_id_parse(text: str) -> tuple[int, str, int] | None:
    """(period, division name, number) of a cohort id, or None when it is not one."""
    head, _, rest = text.partition("-")
    name, _, tail = rest.rpartition("-")
    if not (head.isascii() and head.isdigit() and tail.isascii() and tail.isdigit() and name):
        return None
    if len(head) > 9 or len(tail) > 9:
        return None
    return int(head), name, int(tail)


def cohort_tags_live(game: str) -> list[str]:
    """The slot tags of the cohorts of the game's league periods whose grace has not ended (boards/
    slots.py's source of whole slots, connected in apps.py): on a Redis Cluster each gets the game's
    pause flag and hidden players, as a tournament period's slot does, so a rebuild pauses the
    cohort applies too and a hidden player's results stay off the cohort boards."""
    now = timezone.now()
    tags: list[str] = []
    for league in League.objects.filter(game__slug=game, created_at__lte=now).order_by("id"):
        for period in periods_open(schedule_of(league), now):
            cohorts = LeagueCohort.objects.filter(league=league, period=period.index).values_list("division", "number")
            tags += [cohort_tag(game, league.slug, period.index, d, n) for d, n in cohorts]
    return tags
