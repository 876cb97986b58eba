"""The tournament periods that live in Redis and still change: started and not final (active, or
in their grace). Their boards are rewritten by the rebuild and compared by the reconciliation
(scoring), a hidden or deleted player leaves them (scoring/players.py), and on a Redis Cluster
their slots get the game's pause flag and hidden players' copies (boards/slots.py, through
`period_tags_live`, connected in apps.py)."""

from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from seasons.models import Game

from . import keys
from .models import Tournament
from .periods import Period, periods_open
from .services import schedule_of
from .validation import MAX_GRACE_S


def periods_live(*, game_id: int, now: datetime) -> list[tuple[Tournament, Period]]:
    """Each tournament of the game with each of its periods started and not final at `now`. One
    query; tournaments whose window closed more than the longest grace ago are not looked at."""
    closed_before = now - timedelta(seconds=MAX_GRACE_S)
    tournaments = (
        Tournament.objects.filter(game_id=game_id, starts_at__lte=now)
        .filter(Q(ends_at__isnull=True) | Q(ends_at__gt=closed_before))
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=closed_before))
        .select_related("game")
        .order_by("id")
    )
    return [(t, period) for t in tournaments for period in periods_open(schedule_of(t), now)]


def period_tags_live(game: str) -> list[str]:
    """The slot tags of the game's live periods (boards/slots.py's source of whole slots)."""
    game_id = Game.objects.filter(slug=game).values_list("id", flat=True).first()
    if game_id is None:
        return []
    return [keys.period_tag(game, t.slug, p.index) for t, p in periods_live(game_id=game_id, now=timezone.now())]
