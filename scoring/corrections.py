"""Corrections: a player's boards re-derived from the ledger and written as absolute values.

ZADD GT and increments cannot lower a score, so revocations go this way: recompute the player's
entry on every affected board from the accepted events that remain, then write it (or remove the
member) in one Lua call that also sets the dedup markers of the events the new values include, so
a queued apply of one of them cannot count it again. The player's row is locked for the duration
(one correction per player at a time, however many moderators).
"""

from collections.abc import Iterable
from datetime import date

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from boards.models import Player
from seasons.models import Game, Season, TieRule

from . import redis_boards
from .board_writer import boards_for
from .encoding import ScoreCodec
from .models import EventStatus, ScoreEvent
from .selectors import ledger_boards

CORRECT = redis_boards.lua_path(__file__, "correct_player.lua")


class CorrectionPaused(RuntimeError):
    """The game is being rebuilt; try again in a moment."""


def player_correct(*, game: Game, player_id: str, extra_regions: Iterable[str] = ()) -> int:
    """Re-derive `player_id`'s entries on every board they have (or had) events on, and on the
    boards of `extra_regions` (a region they were moved out of). Returns the number of boards
    changed. Locks the player row. Per season, one Lua call: the move between regions is atomic."""
    with transaction.atomic():
        Player.objects.select_for_update().filter(game=game, player_id=player_id).first()
        events = list(
            ScoreEvent.objects.filter(game=game, player_id=player_id).values_list(
                "season_id", "day", "week", "region", "status", "applied_at", "id", "extra_boards"
            )
        )
        expected = ledger_boards(game=game, player_ids=[player_id])
        seasons = {s.id: s for s in Season.objects.filter(id__in={e[0] for e in events})}
        included = [e[6] for e in events if e[4] == EventStatus.ACCEPTED and e[5] is None]
        keys: dict[int, set[str]] = {}
        for season_id, day, week, region, *_, extra in events:
            for reg in {region, *extra_regions}:
                sums, bests = boards_for(
                    game=game.slug,
                    season_id=season_id,
                    day=_as_date(day),
                    week=week,
                    region=reg,
                    extra=tuple(extra or ()),
                )
                keys.setdefault(season_id, set()).update(b.key for b in sums + bests)
        for board in expected.values():
            keys.setdefault(board.ref.season_id, set()).add(board.ref.key)
        changed = 0
        for season_id, season_keys in keys.items():
            changed += _write(game, seasons[season_id], player_id, sorted(season_keys), expected, included)
            included = []  # markers are per event, written once
    return changed


def _as_date(value: date | str) -> date:
    return value if isinstance(value, date) else date.fromisoformat(value)


def _write(game: Game, season: Season, player_id: str, keys: list[str], expected, included: list[int]) -> int:
    codec = ScoreCodec(season.time_bits)
    dense = game.tie_rule == TieRule.DENSE
    all_keys = [redis_boards.pause_key(game.slug), *keys, *(redis_boards.distinct_key(k) for k in keys)]
    now = timezone.now()
    values, ttls = [], []
    for key in keys:
        board = expected.get(key)
        score = board.scores.get(player_id) if board is not None else None
        ttl = board.ttl_left_s(now) if board is not None else None
        if ttl is not None and ttl <= 0:
            score = None  # a day or week board past its TTL stays gone
        values.append("" if score is None else str(score))
        ttls.append(ttl or 0)
    marks: list[int | str] = []
    index: dict[str, int] = {}
    for event_id in included:
        dkey, field = redis_boards.dedup_location(event_id)
        if dkey not in index:
            all_keys.append(dkey)
            index[dkey] = len(all_keys)
        marks += [index[dkey], field]
    client = redis_boards.client()
    reply = redis_boards.lua_script(CORRECT)(
        keys=all_keys, args=[player_id, len(keys), codec.time_span, int(dense), *values, *ttls, *marks], client=client
    )
    if reply[0] == "paused":
        raise CorrectionPaused(game.slug)
    if int(reply[1]):
        client.sadd(redis_boards.dirty_key(), *keys)
        client.incr(redis_boards.generation_key(game.slug))
    for dkey in index:
        client.expire(dkey, settings.SCORING_DEDUP_TTL_S)
    return int(reply[1])
