"""Every Redis key of the board index: the only module that spells them. (The other apps' keys:
anticheat/keys.py, seasons/keys.py, common/keys.py; the prefix and the Celery broker's keys:
common/redis.py. leaderboard_site/tests/test_key_modules.py checks that no other module spells one.)

Keys (prefix `lb` by default, REDIS_KEY_PREFIX; the connection is common/redis.py):
    lb:b:{game}:{season}:{board}:{region}:{period}   a board (sorted set, encoded scores)
    lb:b:{game}:{season}:{board}:{region}:{period}:{{game}.{season}.{k}}
                                                     shard k of a board of a season with board_shards
                                                     S > 1: the players with shard_of(player, S) = k.
                                                     The last part is a Redis Cluster hash tag, so
                                                     every board of one (game, season, shard) shares
                                                     a slot (one script applies to all of them)
    <board key>:d                                    distinct points on it (dense tie rule)
    <board key>:v                                    its version: up with every change, in the same
                                                     script as the change (cached reads compare it)
    <board key>:rebuild  <board key>:old             a rebuild's staged copy and the swapped-out one
    lb:names:{game}  lb:names-v:{game}               display names (hash player -> name), its version
    lb:friends:{game}:{player}                       a player's confirmed friends (a set)
    lb:regions:{game}:{season}                       the season's regions, `global` among them (a set
                                                     copied from the regions table, expiring)
    lb:hidden:{game}                                 hidden and deleted players (a set)
    lb:pause:{game}                                  set while a rebuild swaps keys in
    lb:rebuild-lock:{game}                           held while a rebuild of the game runs (one at a time)
    lb:epoch                                         the boards marker: set once every game's live boards
                                                     are complete (a recovery); missing = Redis lost its data
    lb:recover-lock                                  held while the recovery rebuilds every game
    lb:unreflected-mark                              the last ledger id whose marker the reconciliation compared
    lb:primary                                       run id of the Redis that last answered the failover check
    lb:dd:{event_id // 128}                          dedup markers, field event_id % 128, value the
                                                     event's tag (dedup_tag: which event, not just which id)
    lb:dd:c:{event_id // 128}                        the competition boards' markers (tournament periods,
                                                     league cohorts), field event_id % 128 then the board's
                                                     tag (`competition_dedup_location`)
    lb:dirty  lb:pushed:{board key}  lb:pushed-digest:{board key}   the live publisher's work (the
                                                     changed boards: season boards and other apps'
                                                     boards, tournament periods among them)
Boards: `all` and `best` have period `-`; `daily` has `2026-10-13`, `weekly` `2026-W42`,
`monthly` `2026-10` (boards/kinds.py).

On a Redis Cluster (REDIS_CLUSTER_URL, common/redis.py `boards_client`), every board key ends in a
slot tag (`BoardRef.slot`): `{game.season}` for a season not split, `{game.season.k}` for shard k.
The keys an apply or a correction reads beside the boards get a copy in each slot, so that one
script's keys share a slot:
    lb:pause:{game}:{slot}  lb:hidden:{game}:{slot}  lb:dd:{slot}:{event_id // 128}
(a competition board's markers too: `lb:dd:{its tag}:{event_id // 128}`). The boards, their
companions and versions, these copies and the names live on the cluster; the rest above stays on
REDIS_URL, where `lb:pause:{game}` and `lb:hidden:{game}` stay the game-wide originals
(leaderboard_site/settings/redis.py says why).
"""

import zlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from hashlib import blake2b
from typing import NamedTuple

from common.redis import key_prefix, on_cluster

from .kinds import NO_PERIOD

GLOBAL = "global"
DEDUP_GROUP = 128
REBUILD_SUFFIX = ":rebuild"
OLD_SUFFIX = ":old"


def shard_of(player_id: str, shards: int) -> int:
    """The shard of a player's entries on every board of a season split `shards` ways: a CRC-32 of
    the id, so every process, language and Redis version agrees, and players spread evenly."""
    if shards <= 1:
        return 0
    return zlib.crc32(player_id.encode()) % shards


@dataclass(frozen=True)
class BoardRef:
    """A board, or with `shard` set one shard of a board whose season splits it by player.

    A board of a season with board_shards = 1 has no shard (`shard` None): one sorted set, the
    layout of every season before sharding. With S > 1 the board is S sorted sets; `shard` None
    then names the board as a whole (the live publisher's and the caches' key, never a set in
    Redis), `shards(S)` its sorted sets and `for_player` the one holding a player."""

    game: str
    season_id: int
    board: str
    region: str = GLOBAL
    period: str = NO_PERIOD
    shard: int | None = None

    @property
    def key(self) -> str:
        base = f"{key_prefix()}:b:{self.game}:{self.season_id}:{self.board}:{self.region}:{self.period}"
        if self.shard is None and not on_cluster():
            return base
        return f"{base}:{self.slot}"

    @property
    def slot(self) -> str:
        """The hash tag, braces included, that this board's keys share on a Redis Cluster with
        the pause flag, hidden players and dedup markers the apply script reads beside them: the
        shard's (`{game.season.k}`), or on a cluster the unsplit season's (`{game.season}`)."""
        if self.shard is None:
            return f"{{{self.game}.{self.season_id}}}"
        return f"{{{shard_tag(self.game, self.season_id, self.shard)}}}"

    @property
    def dedup_slot(self) -> str:
        """The slot tag of the dedup markers, pause flag and hidden players this board's writes
        go with: its `slot` on a cluster, "" on one Redis (one set of them per game or deployment,
        the layout before clusters)."""
        return self.slot if on_cluster() else ""

    @property
    def whole(self) -> "BoardRef":
        """The board this shard belongs to (itself when it is not a shard)."""
        return self if self.shard is None else replace(self, shard=None)

    def shards(self, count: int) -> list["BoardRef"]:
        """The sorted sets of this board when its season splits boards `count` ways."""
        whole = self.whole
        if count <= 1:
            return [whole]
        return [replace(whole, shard=k) for k in range(count)]

    def for_player(self, player_id: str, count: int) -> "BoardRef":
        """The sorted set that holds `player_id` when the season splits boards `count` ways."""
        if count <= 1:
            return self.whole
        return replace(self, shard=shard_of(player_id, count))

    @property
    def distinct_key(self) -> str:
        return distinct_key(self.key)

    @property
    def version_key(self) -> str:
        return version_key(self.key)

    @classmethod
    def from_key(cls, key: str) -> "BoardRef":
        parts = key.split(":")
        shard = None
        if parts[-1].startswith("{"):
            tag = parts.pop().strip("{}").split(".")
            shard = int(tag[2]) if len(tag) == 3 else None  # {game.season} on a cluster: not split
        game, season_id, board, region, period = parts[-5:]
        return cls(game, int(season_id), board, region, period, shard)


def shard_tag(game: str, season_id: int, shard: int) -> str:
    """The hash tag (without braces) of one shard of a season's boards."""
    return f"{game}.{season_id}.{shard}"


def distinct_key(board_key: str) -> str:
    return f"{board_key}:d"


def version_key(board_key: str) -> str:
    return f"{board_key}:v"


def is_board_key(key: str) -> bool:
    """A live board (not a companion, a version, nor a rebuild's staged or swapped-out copy)."""
    return not key.endswith((":d", ":v", REBUILD_SUFFIX, OLD_SUFFIX, REBUILD_SUFFIX + ":d"))


def is_season_board_key(key: str) -> bool:
    """A season board's key (`lb:b:...`), not another app's board (a tournament period's)."""
    return key.startswith(f"{key_prefix()}:b:")


def board_pattern(game: str) -> str:
    return f"{key_prefix()}:b:{game}:*"


def season_pattern(game: str, season_id: int) -> str:
    return f"{key_prefix()}:b:{game}:{season_id}:*"


def region_pattern(game: str, season_id: int, board: str, period: str) -> str:
    """Every region's board of one kind and period (for SCAN; unsharded seasons)."""
    pattern = f"{key_prefix()}:b:{game}:{season_id}:{board}:*:{period}"
    return f"{pattern}:{BoardRef(game, season_id, board).slot}" if on_cluster() else pattern


def names_key(game: str) -> str:
    return f"{key_prefix()}:names:{game}"


def names_version_key(game: str) -> str:
    """Up with every change of a display name (cached top-N answers show names)."""
    return f"{key_prefix()}:names-v:{game}"


def regions_key(game: str, season_id: int) -> str:
    """The regions a player of the season counts in, `global` among them (a set: a copy of the
    season's regions table, REGIONS_TTL_S long, rebuilt by the first read that misses it)."""
    return f"{key_prefix()}:regions:{game}:{season_id}"


def friends_key(game: str, player_id: str) -> str:
    """A player's confirmed friends (a set), kept with the friendships table."""
    return f"{key_prefix()}:friends:{game}:{player_id}"


def hidden_key(game: str, slot: str = "") -> str:
    """The game's hidden (privacy) and deleted players: the board writer skips them. With `slot`
    (on a cluster), the copy the apply script reads in that slot: the players of that shard, plus
    HIDDEN_READY once filled (boards/slots.py)."""
    return f"{key_prefix()}:hidden:{game}" + (f":{slot}" if slot else "")


def pause_key(game: str, slot: str = "") -> str:
    """Set while a rebuild swaps the game's keys; with `slot` (on a cluster), the copy in that slot."""
    return f"{key_prefix()}:pause:{game}" + (f":{slot}" if slot else "")


# A member of every filled per-slot hidden set on a cluster: no player id is empty.
HIDDEN_READY = ""


def rebuild_lock_key(game: str) -> str:
    """Held while a rebuild of the game runs: two at once would write the same staged copies."""
    return f"{key_prefix()}:rebuild-lock:{game}"


def epoch_key() -> str:
    """The boards marker of the deployment (boards/epoch.py): written once the live boards of every
    game were rebuilt from the ledger; a Redis that lost its data has lost it too."""
    return f"{key_prefix()}:epoch"


def unreflected_mark_key() -> str:
    """The last ledger id whose dedup marker the reconciliation compared (scoring/unreflected.py)."""
    return f"{key_prefix()}:unreflected-mark"


def primary_key() -> str:
    """The run id of the Redis server the failover check last found answering (scoring/failover.py):
    a replica promoted in its place holds the old one's, copied with the rest."""
    return f"{key_prefix()}:primary"


def recover_lock_key() -> str:
    """Held while the recovery rebuilds every game (one recovery at a time)."""
    return f"{key_prefix()}:recover-lock"


def deployment_prefix() -> str:
    """The deployment's prefix, for a caller that places many dedup markers at once: it looks the
    prefix up once and hands it to each `dedup_location` (the writer, per apply)."""
    return key_prefix()


def dedup_location(event_id: int, slot: str = "", prefix: str | None = None) -> tuple[str, str]:
    """Markers are grouped 128 to a small hash (listpack-encoded: a few bytes each); on a cluster
    in the slot of the player's shard of the event's season (`BoardRef.dedup_slot`). `prefix`: the
    deployment's (`deployment_prefix()`), when the caller looked it up once for many events."""
    group = f"{slot}:{event_id // DEDUP_GROUP}" if slot else str(event_id // DEDUP_GROUP)
    return f"{prefix if prefix is not None else key_prefix()}:dd:{group}", str(event_id % DEDUP_GROUP)


def competition_dedup_location(event_id: int, tag: str, prefix: str, *, cluster: bool) -> tuple[str, str]:
    """Where a competition board's (tag, braces included) marker of an event lies. On a cluster in
    the board's slot, as `dedup_location` puts it. On one Redis every competition board's markers
    share the hashes of 128 ids, the board's tag after the id in the field: a league cohort holds
    one or two of a batch's results, so a hash of its own per 128 ids held a single marker, a key
    and its expiry for nearly every result (about 150 bytes each for the markers' lifetime, and
    a key made and an EXPIRE sent by the apply script per result)."""
    if cluster:
        return dedup_location(event_id, tag, prefix)
    return f"{prefix}:dd:c:{event_id // DEDUP_GROUP}", f"{event_id % DEDUP_GROUP}{tag}"


class MarkedEvent(NamedTuple):
    """What a dedup marker names, and where it lies."""

    event_id: int
    accepted_at: datetime
    slot: str = ""  # `BoardRef.dedup_slot` of the event's boards: "" on one Redis


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def dedup_tag(event_id: int, accepted_at: datetime) -> str:
    """A marker's value: 32 bits of a hash of the event's id and the microsecond it was accepted.

    The row id alone does not name an event: a restored ledger rewinds its id sequence, and a new
    database (or another deployment on the same Redis) starts its ids again, so an id can come back
    for another result while the old marker is still in Redis. A marker counts only when its tag is
    this event's, so the other result is applied, not skipped (a chance of 1 in 2^32 per reused id
    that it is not; the reconciliation finds that one). A redelivery of the same row has the same
    id and accepted_at, so the same tag. As a decimal integer, listpack stores it in 5 bytes.
    Never "1", the value of markers before tags, which therefore match nothing."""
    return dedup_tag_micros(event_id, epoch_micros(accepted_at))


def epoch_micros(moment: datetime) -> int:
    """Microseconds since the Unix epoch."""
    return (moment - _EPOCH) // _MICROSECOND


def dedup_tag_micros(event_id: int, micros: int) -> str:
    """`dedup_tag` of an event accepted `micros` microseconds after the epoch."""
    digest = blake2b(f"{event_id}:{micros}".encode(), digest_size=4).digest()
    tag = int.from_bytes(digest, "big", signed=True)
    return "2" if tag == 1 else str(tag)


def dirty_key() -> str:
    """Boards changed since the live publisher last looked (a set of board keys)."""
    return f"{key_prefix()}:dirty"


def pushed_key(board_key: str) -> str:
    """Set for a second after a board's top 10 was pushed (the throttle)."""
    return f"{key_prefix()}:pushed:{board_key}"


def pushed_digest_key(board_key: str) -> str:
    """The digest of the last top 10 pushed for a board (pushes only on change)."""
    return f"{key_prefix()}:pushed-digest:{board_key}"
