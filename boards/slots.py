"""Where a game's writes meet on a Redis Cluster: the slot tags of its live seasons, and the
per-slot copies of its pause flag and hidden players (boards/keys.py lists the keys).

On one Redis (REDIS_CLUSTER_URL empty) every function here is a no-op or answers "" without a
query: the pause flag, hidden players and dedup markers are one set per game or deployment, as
before clusters.

Why copies: the apply script reads the game's pause flag and hidden players beside the boards it
writes, atomically, and on a cluster a script's keys must share one slot. The game-wide originals
stay on REDIS_URL (the writer's source, and what the reconciliation and the health check read);
each slot gets its own copy:
- the pause flag: set in every live slot while a rebuild swaps keys (`staging.game_paused`);
Besides the seasons' slots, the slots of other apps' boards that hold every player of a game in one
slot and live in Redis (a tournament period's, `{game.t.tournament.period}`: competitions names
them through `whole_slots_source_add`) get the same copies, so their applies pause with the game's
rebuild and skip its hidden players.
- hidden players: each slot holds the hidden players of its shard plus HIDDEN_READY, filled from
  the original the first time the writer meets the slot (a new season, or a node that lost its
  data) and kept by every hide and unhide after that. A hide adds to the copies unconditionally,
  so a fill that read the original just before it still ends with the player hidden. Not covered:
  an unhide racing the very first fill of a slot may leave the player hidden in that slot (their
  results skipped there) until the next rebuild of the game, which writes every copy again.
"""

from collections.abc import Callable, Iterable

from common.redis import boards_client, client, on_cluster
from seasons.models import Season

from . import keys
from .keys import BoardRef, shard_of

WholeSlots = Callable[[str], Iterable[str]]  # a game's slugs -> the slot tags of its boards held whole
_whole_sources: list[WholeSlots] = []


def whole_slots_source_add(source: WholeSlots) -> None:
    """Name a source of live slots beyond the seasons': `source(game)` gives the slot tags of boards
    that hold every player of the game in one slot and still change (an app above sets it when
    ready). Each gets the pause flag and hidden players' copies, as a season's slot does."""
    if source not in _whole_sources:
        _whole_sources.append(source)


def live_slots(game: str) -> list[str]:
    """The slot tags of the game's seasons not frozen (whose boards live in Redis); [] on one Redis."""
    return list(_live_slot_shards(game))


class EventSlots:
    """The dedup slot of results (`BoardRef.dedup_slot`): the slot of the player's shard of the
    result's season on a cluster, "" on one Redis. Reads each season once."""

    def __init__(self) -> None:
        self._seasons: dict[int, tuple[str, int]] = {}

    def of(self, *, season_id: int, player_id: str) -> str:
        if not on_cluster():
            return ""
        if season_id not in self._seasons:
            season = Season.objects.select_related("game").get(id=season_id)
            self._seasons[season_id] = (season.game.slug, season.board_shards)
        game, shards = self._seasons[season_id]
        return BoardRef(game, season_id, "all").for_player(player_id, shards).slot


def hidden_slots_fill(*, game: str, slots: Iterable[str], whole: Iterable[str] = ()) -> None:
    """Fill the per-slot hidden sets among `slots` (and `whole`: slots whose board holds every
    player, a tournament period's) that the writer has not met yet (no HIDDEN_READY) from the game's
    original: before an apply writes to them."""
    held_whole = set(whole)
    wanted = sorted(set(slots) | held_whole)
    if not wanted:
        return
    redis = boards_client()
    pipe = redis.pipeline(transaction=False)
    for slot in wanted:
        pipe.sismember(keys.hidden_key(game, slot), keys.HIDDEN_READY)
    empty = [slot for slot, ready in zip(wanted, pipe.execute(), strict=True) if not ready]
    if not empty:
        return
    hidden = [str(p) for p in client().smembers(keys.hidden_key(game))]
    live = _live_slot_shards(game)
    for slot in empty:
        found = (1, None) if slot in held_whole else live.get(slot)
        shards, shard = found or _slot_shards(slot)  # a frozen season's late apply: its row
        members = [p for p in hidden if shards <= 1 or shard_of(p, shards) == shard]
        redis.sadd(keys.hidden_key(game, slot), keys.HIDDEN_READY, *members)


def hidden_slots_change(*, game: str, player_ids: list[str], hidden: bool) -> None:
    """A hide or unhide into every live slot's copy (the original is the caller's)."""
    slots = _live_slot_shards(game)
    if not slots or not player_ids:
        return
    pipe = boards_client().pipeline(transaction=False)
    for slot, (shards, shard) in slots.items():
        members = [p for p in player_ids if shards <= 1 or shard_of(p, shards) == shard]
        if members:
            if hidden:
                pipe.sadd(keys.hidden_key(game, slot), *members)
            else:
                pipe.srem(keys.hidden_key(game, slot), *members)
    pipe.execute()


def hidden_slots_rebuild(*, game: str, hidden: list[str]) -> None:
    """Every live slot's copy written again from `hidden` (the rebuild's)."""
    redis = boards_client()
    for slot, (shards, shard) in _live_slot_shards(game).items():
        members = [p for p in hidden if shards <= 1 or shard_of(p, shards) == shard]
        pipe = redis.pipeline(transaction=True)  # one key: one slot
        pipe.delete(keys.hidden_key(game, slot))
        pipe.sadd(keys.hidden_key(game, slot), keys.HIDDEN_READY, *members)
        pipe.execute()


def _live_slot_shards(game: str) -> dict[str, tuple[int, int | None]]:
    """Each live slot tag of the game: (its season's board_shards, its shard); {} on one Redis."""
    if not on_cluster():
        return {}
    found: dict[str, tuple[int, int | None]] = {}
    for season in Season.objects.filter(game__slug=game, frozen_at__isnull=True):
        ref = BoardRef(game, int(season.id), "all")
        for part in ref.shards(season.board_shards):
            found[part.slot] = (season.board_shards, part.shard)
    for source in _whole_sources:
        for slot in source(game):
            found[slot] = (1, None)
    return found


def _slot_shards(slot: str) -> tuple[int, int | None]:
    """(the season's board_shards, the shard) of a slot tag, from the season row."""
    parts = slot.strip("{}").split(".")
    season = Season.objects.only("board_shards").get(id=int(parts[1]))
    return season.board_shards, (int(parts[2]) if len(parts) == 3 else None)
