"""Rebuilding a game's boards in place: staged copies, a short pause, one swap.

A rebuild (scoring/rebuild.py holds the ledger's side) streams every board's new content into
`<key>:rebuild` while the live boards keep updating (`BoardStager`: pipelined ZADDs, a chunk at a
time, so memory stays flat for boards of millions), pauses the game's applies (`game_paused`: the
apply script answers "paused" and the caller retries), patches the staged copies with what moved
meanwhile (`board_stage_patch`), then renames every staged key over its live key in one MULTI
(`boards_swap`; on a Redis Cluster one per slot tag). Display names and the hidden set are
rebuilt from the players table (`names_rebuild`, `hidden_rebuild`).
"""

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Q
from redis.client import Pipeline

from common.redis import boards_client, client
from seasons.models import Game

from . import keys
from .codec import ScoreCodec
from .keys import BoardRef, shard_of
from .kinds import KINDS
from .models import Friendship, Player
from .slots import hidden_slots_rebuild, live_slots
from .tally import BoardEntry, BoardScores, moment_of

PAUSE_TTL_S = 120
WRITE_CHUNK = 5000  # members per ZADD
PIPE_MEMBERS = 50_000  # members queued before the pipeline goes out

Progress = Callable[[int], None]


@dataclass
class StagedBoard:
    """A board staged under `<key>:rebuild`: what the patch and the swap need to know of it."""

    ref: BoardRef
    last_write: datetime  # the latest accept time of a result on it (periodic boards expire after it)

    def ttl_left_s(self, now: datetime) -> int | None:
        return KINDS[self.ref.board].ttl_left_s(self.last_write, now)


@dataclass(eq=False)
class _Staging:
    """A board being streamed in: its queued members (flat score, member pairs for ZADD) and, for
    the dense rule, its distinct points (entries arrive in display order, so a new value is a
    change from the previous one)."""

    ref: BoardRef
    key: str
    time_bits: int
    last_us: int = 0
    members: list[int | str] = field(default_factory=list)
    distinct: list[int | str] = field(default_factory=list)
    previous_points: int = -1


class BoardStager:
    """Writes streamed board entries (`BoardEntry`, as the ledger's derivation yields them) into
    the staged copies of their boards, and with `dense` their distinct-points companions; then
    `finish` gives the staged boards their lifetimes. For the dense rule the entries of a board
    must come in display order (its companion is written as its points change).

    The writes go out in pipelines of PIPE_MEMBERS members from a thread of its own, one pipeline
    at a time and in order: Redis stores one batch while the caller reads and queues the next
    (Redis, PostgreSQL and this process each keep a core busy). Use it as a context manager (the
    thread ends with the block)."""

    def __init__(
        self,
        *,
        game: str,
        dense: bool,
        codecs: Mapping[int, ScoreCodec],
        shards: Mapping[int, int] | None = None,
        only_shard: int | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.game = game
        self.dense = dense
        self.codecs = codecs
        self.shards = {sid: n for sid, n in (shards or {}).items() if n > 1}  # seasons whose boards are split
        self.only_shard = only_shard  # stage that shard of the split seasons only (the others' entries pass)
        self.progress = progress
        self.members = 0
        self._boards: dict[tuple[str, int, str, str, int], _Staging] = {}
        self._sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="board-stager")
        self._sent: Future[list[Any]] | None = None
        self._pipe = boards_client().pipeline(transaction=False)
        # ZADD with flat (score, member) arguments, as they stream in: no mapping built per chunk.
        self._command: Callable[..., Any] = self._pipe.execute_command
        self._queued = 0

    def __enter__(self) -> "BoardStager":
        return self

    def __exit__(self, *exc: object) -> None:
        self._sender.shutdown(wait=True, cancel_futures=True)

    def write(self, rows: Iterable[BoardEntry]) -> None:
        boards = self._boards
        dense = self.dense
        split = self.shards
        only = self.only_shard
        for kind, season_id, region, period, player, score, last_us in rows:
            shard = shard_of(player, split[season_id]) if split and season_id in split else -1
            if only is not None and shard != only:
                continue
            board = boards.get((kind, season_id, region, period, shard))
            if board is None:
                board = self._open(kind, season_id, region, period, shard)
            members = board.members
            members.append(score)
            members.append(player)
            if last_us > board.last_us:
                board.last_us = last_us
            if dense:
                points = score >> board.time_bits
                if points != board.previous_points:
                    board.previous_points = points
                    board.distinct.append(points)
                    board.distinct.append(str(points))
                    if len(board.distinct) >= 2 * WRITE_CHUNK:
                        self._command("ZADD", keys.distinct_key(board.key), *board.distinct)
                        board.distinct.clear()
            if len(members) >= 2 * WRITE_CHUNK:
                self._flush(board)

    def _open(self, kind: str, season_id: int, region: str, period: str, shard: int) -> _Staging:
        ref = BoardRef(self.game, season_id, kind, region, period, None if shard < 0 else shard)
        board = _Staging(ref=ref, key=ref.key + keys.REBUILD_SUFFIX, time_bits=self.codecs[season_id].time_bits)
        self._boards[(kind, season_id, region, period, shard)] = board
        for name in (board.key, keys.distinct_key(board.key)):  # a leftover of an earlier run
            self._pipe.delete(name)  # one key a command: a cluster's pipeline takes no more
        return board

    def _flush(self, board: _Staging) -> None:
        if board.members:
            self._command("ZADD", board.key, *board.members)
            self._queued += len(board.members) // 2
            board.members.clear()
        if board.distinct:
            self._command("ZADD", keys.distinct_key(board.key), *board.distinct)
            board.distinct.clear()
        if self._queued >= PIPE_MEMBERS:
            self._send()

    def _send(self) -> None:
        self._wait()  # one pipeline in flight at most: memory stays bounded, commands keep their order
        self._sent = self._sender.submit(self._pipe.execute)
        self._pipe = boards_client().pipeline(transaction=False)
        self._command = self._pipe.execute_command
        self.members += self._queued
        if self.progress:
            self.progress(self._queued)
        self._queued = 0

    def _wait(self) -> None:
        if self._sent is not None:
            sent, self._sent = self._sent, None
            sent.result()  # raises what the pipeline raised

    def finish(self, *, now: datetime) -> dict[str, StagedBoard]:
        """Write what is queued, give each staged board (and companion) its lifetime, drop the ones
        whose lifetime had ended by `now`. Returns the staged boards by live key."""
        for board in self._boards.values():
            self._flush(board)
        staged: dict[str, StagedBoard] = {}
        for board in self._boards.values():
            done = StagedBoard(ref=board.ref, last_write=moment_of(board.last_us))
            ttl = done.ttl_left_s(now)
            names = [board.key, keys.distinct_key(board.key)] if self.dense else [board.key]
            if ttl is not None and ttl <= 0:
                for name in names:
                    self._pipe.unlink(name)
                continue
            if ttl is not None:
                for name in names:
                    self._pipe.expire(name, ttl)
            staged[board.ref.key] = done
        self._send()
        self._wait()
        self._boards.clear()
        return staged


def board_stage_patch(
    *,
    staged: dict[str, StagedBoard],
    fresh: dict[str, BoardScores],
    players: set[str],
    dense: bool,
    codecs: Mapping[int, ScoreCodec],
    now: datetime,
) -> None:
    """Bring the staged copies up to date for `players`, whose entries `fresh` holds as they are
    now: drop those gone, write the new ones, and with `dense` move the companions' distinct
    points to match (a value leaves when no member of the board holds it any more). `staged` is
    updated in place (it is what the swap installs); a board left empty leaves it. A board of
    `fresh` not staged yet (its period began during phase 1) is added unless its lifetime has
    ended."""
    fresh = {k: b for k, b in fresh.items() if k in staged or not b.expired(now)}
    redis = boards_client()
    touched = sorted(players)
    old_points = _distinct_points_held(redis, staged=staged, touched=touched, codecs=codecs) if dense else {}
    pipe = redis.pipeline(transaction=False)
    new_points = _staged_rewrite(pipe, staged=staged, fresh=fresh, touched=touched, dense=dense, codecs=codecs, now=now)
    pipe.execute()
    if dense:  # values the touched players held before: still held by someone else?
        _distinct_points_drop(pipe, staged=staged, old_points=old_points, new_points=new_points, codecs=codecs)
    _staged_empty_drop(pipe, staged=staged)


def _distinct_points_held(
    redis: Any, *, staged: dict[str, StagedBoard], touched: list[str], codecs: Mapping[int, ScoreCodec]
) -> dict[str, set[int]]:
    """The dense rule: the points the touched players hold on each staged copy before the patch."""
    old_points: dict[str, set[int]] = {}
    if touched and staged:
        pipe = redis.pipeline(transaction=False)
        for key in staged:
            pipe.zmscore(key + keys.REBUILD_SUFFIX, touched)
        for key, scores in zip(staged, pipe.execute(), strict=True):
            codec = codecs[staged[key].ref.season_id]
            old_points[key] = {codec.points(score) for score in scores if score is not None}
    return old_points


def _staged_rewrite(
    pipe: Any,
    *,
    staged: dict[str, StagedBoard],
    fresh: dict[str, BoardScores],
    touched: list[str],
    dense: bool,
    codecs: Mapping[int, ScoreCodec],
    now: datetime,
) -> dict[str, set[int]]:
    """Queue on `pipe` the touched players' entries as `fresh` has them: those gone removed, the
    new ones written (with `dense`, their points into the companions), each board's lifetime
    renewed. Boards of `fresh` not staged yet join `staged`. Returns the points each board's
    touched players hold now (with `dense`)."""
    for key in staged:
        gone = [p for p in touched if key not in fresh or p not in fresh[key].scores]
        if gone:
            pipe.zrem(key + keys.REBUILD_SUFFIX, *gone)
    new_points: dict[str, set[int]] = {}
    for key, board in fresh.items():
        target = staged.get(key)
        if target is None:
            target = staged[key] = StagedBoard(ref=board.ref, last_write=board.last_write)
        target.last_write = max(target.last_write, board.last_write)
        stage_key = key + keys.REBUILD_SUFFIX
        if board.scores:
            pipe.zadd(stage_key, board.scores)
        if dense:
            codec = codecs[board.ref.season_id]
            new_points[key] = {codec.points(score) for score in board.scores.values()}
            if new_points[key]:
                pipe.zadd(keys.distinct_key(stage_key), {str(p): p for p in new_points[key]})
        ttl = target.ttl_left_s(now)
        if ttl is not None:
            for name in [stage_key, keys.distinct_key(stage_key)] if dense else [stage_key]:
                pipe.expire(name, max(ttl, 1))
    return new_points


def _distinct_points_drop(
    pipe: Any,
    *,
    staged: dict[str, StagedBoard],
    old_points: dict[str, set[int]],
    new_points: dict[str, set[int]],
    codecs: Mapping[int, ScoreCodec],
) -> None:
    """The dense rule: a value the touched players held before and hold no more leaves its
    companion when no other member of the board holds it (a ZCOUNT over the value's score range)."""
    leaving = [(key, p) for key, held in old_points.items() for p in held - new_points.get(key, set())]
    for key, p in leaving:
        span = codecs[staged[key].ref.season_id].time_span
        pipe.zcount(key + keys.REBUILD_SUFFIX, p * span, p * span + span - 1)
    for (key, p), left in zip(leaving, pipe.execute(), strict=True):
        if not left:
            pipe.zrem(keys.distinct_key(key + keys.REBUILD_SUFFIX), str(p))
    pipe.execute()


def _staged_empty_drop(pipe: Any, *, staged: dict[str, StagedBoard]) -> None:
    """Boards every member left have no staged copy: nothing to swap in (the live board goes as
    stale). They leave `staged`."""
    for key in staged:
        pipe.exists(key + keys.REBUILD_SUFFIX)
    for key, exists in zip(list(staged), pipe.execute(), strict=True):
        if not exists:
            del staged[key]


@contextmanager
def game_paused(game: str, reason: str) -> Iterator[None]:
    """The game's applies and corrections wait (they answer "paused") until the block ends; the
    flag expires by itself if the process dies."""
    redis = client()
    redis.set(keys.pause_key(game), reason, ex=PAUSE_TTL_S)
    slots = live_slots(game)  # on a cluster, the copy in each slot the scripts read
    if slots:
        pipe = boards_client().pipeline(transaction=False)
        for slot in slots:
            pipe.set(keys.pause_key(game, slot), reason, ex=PAUSE_TTL_S)
        pipe.execute()
    try:
        yield
    finally:
        if slots:
            boards_client().delete(*(keys.pause_key(game, slot) for slot in slots))
        redis.delete(keys.pause_key(game))


def boards_swap(
    *,
    game: str,
    board_keys: set[str],
    dense: bool,
    kinds: Collection[str] | None = None,
    season_ids: Collection[int] | None = None,
    shard: int | None = None,
    applied_events: Collection[keys.MarkedEvent] = (),
    dedup_ttl_s: int = 0,
) -> int:
    """Rename every staged key over its live key (one MULTI); drop live boards not in `board_keys`
    (of `kinds` only, when the rebuild took only those; of `season_ids` only, when it took only
    those seasons; of shard `shard` of split seasons only, when it took only that shard). The same
    MULTI sets the dedup markers of `applied_events` (results the new boards hold that the worker
    has not applied yet), so the boards and the markers change together: a rebuild that fails
    before the swap has marked nothing. Returns the number of live
    boards dropped. The old values are unlinked (freed in the background), so a 1M-member board
    does not block Redis."""
    redis = boards_client()
    existing = _live_boards(redis, game=game, kinds=kinds, season_ids=season_ids, shard=shard)
    multis = _SlotMultis(redis)
    old_keys = _swap_renames(multis, board_keys=board_keys, existing=existing, dense=dense)
    stale = [k for k in existing if k not in board_keys and not (k.endswith(":d") and k[:-2] in board_keys)]
    version = versions_next()
    for key in [*board_keys, *(k for k in stale if keys.is_board_key(k))]:
        multis.for_board(key).set(keys.version_key(key), version)
    _markers_set(multis, applied_events=applied_events, dedup_ttl_s=dedup_ttl_s)
    multis.execute()
    garbage = old_keys + stale
    if garbage:
        redis.unlink(*garbage)
    return len(stale)


def _live_boards(
    redis: Any,
    *,
    game: str,
    kinds: Collection[str] | None,
    season_ids: Collection[int] | None,
    shard: int | None,
) -> set[str]:
    """The game's live boards and their dense companions (not staged copies, leftovers or
    versions), of `kinds`, `season_ids` and shard `shard` only when given."""
    scanned = {str(k) for k in redis.scan_iter(match=keys.board_pattern(game), count=1000)}
    existing = {k for k in scanned if keys.is_board_key(k) or (k.endswith(":d") and keys.is_board_key(k[:-2]))}
    if kinds is not None:
        existing = {k for k in existing if BoardRef.from_key(k.removesuffix(":d")).board in kinds}
    if season_ids is not None:
        existing = {k for k in existing if BoardRef.from_key(k.removesuffix(":d")).season_id in season_ids}
    if shard is not None:
        existing = {k for k in existing if BoardRef.from_key(k.removesuffix(":d")).shard == shard}
    return existing


class _SlotMultis:
    """The swap's MULTIs: one on one Redis; on a cluster one per slot (a MULTI's keys share a
    slot), every slot's boards, versions and markers together, the game paused meanwhile. Executed
    in the order their slots were first used."""

    __slots__ = ("_pipes", "_redis")

    def __init__(self, redis: Any) -> None:
        self._redis = redis
        self._pipes: dict[str, Any] = {}

    def for_slot(self, slot: str) -> Any:
        pipe = self._pipes.get(slot)
        if pipe is None:
            pipe = self._pipes[slot] = self._redis.pipeline(transaction=True)
        return pipe

    def for_board(self, key: str) -> Any:
        """The MULTI of a board's (or its companion's) slot."""
        return self.for_slot(BoardRef.from_key(key.removesuffix(":d")).dedup_slot)

    def execute(self) -> None:
        for pipe in self._pipes.values():
            pipe.execute()


def _swap_renames(multis: _SlotMultis, *, board_keys: set[str], existing: set[str], dense: bool) -> list[str]:
    """Queue the renames: each live board (and companion) aside to `<key>:old`, then its staged
    copy over it. RENAME goes through execute_command: redis-py's cluster pipeline blocks its
    method, as the two names could lie in two slots; here they share one (a board's keys carry its
    slot tag). Returns the names set aside (to unlink after the swap)."""
    old_keys = []
    for key in board_keys:
        for name in [key, keys.distinct_key(key)] if dense else [key]:
            if name in existing:
                multis.for_board(key).execute_command("RENAME", name, name + keys.OLD_SUFFIX)
                old_keys.append(name + keys.OLD_SUFFIX)
    for key in board_keys:
        pipe = multis.for_board(key)
        pipe.execute_command("RENAME", key + keys.REBUILD_SUFFIX, key)
        if dense:
            pipe.execute_command("RENAME", keys.distinct_key(key + keys.REBUILD_SUFFIX), keys.distinct_key(key))
    return old_keys


def _markers_set(multis: _SlotMultis, *, applied_events: Collection[keys.MarkedEvent], dedup_ttl_s: int) -> None:
    """Queue the dedup markers of `applied_events` (each in its slot's MULTI), and their hashes'
    lifetime."""
    marker_keys = set()
    for event_id, accepted_at, slot in applied_events:
        dkey, dfield = keys.dedup_location(event_id, slot)
        multis.for_slot(slot).hset(dkey, dfield, keys.dedup_tag(event_id, accepted_at))
        marker_keys.add((slot, dkey))
    for slot, dkey in marker_keys:
        multis.for_slot(slot).expire(dkey, dedup_ttl_s)


def versions_renew(pipe: Pipeline, board_keys: Iterable[str]) -> None:
    """Queue new versions for boards whose content is replaced wholesale (a swap): `versions_next`."""
    version = versions_next()
    for key in board_keys:
        pipe.set(keys.version_key(key), version)


def versions_next() -> str:
    """A version above every version the boards had: Redis's clock in microseconds (versions start
    at the clock of their board's birth and go up by one per change). Cached answers of a board
    whose content is replaced wholesale are then never served."""
    seconds, micros = boards_client().time()
    return str(int(seconds) * 1_000_000 + int(micros))


def names_rebuild(*, game: Game) -> None:
    """The game's display names from the players table into Redis."""
    names = Player.objects.filter(game=game, display_name__isnull=False).values_list("player_id", "display_name")
    redis = boards_client()
    batch: dict[str, str] = {}
    for player_id, name in names.iterator(chunk_size=10_000):
        batch[player_id] = name or ""
        if len(batch) >= WRITE_CHUNK:
            redis.hset(keys.names_key(game.slug), mapping=batch)  # type: ignore[arg-type]
            batch = {}
    if batch:
        redis.hset(keys.names_key(game.slug), mapping=batch)  # type: ignore[arg-type]
    redis.incr(keys.names_version_key(game.slug))


def friends_rebuild(*, game: Game) -> None:
    """Every player's friends set from the friendships table into Redis (stale sets go)."""
    redis = client()
    sets: dict[str, set[str]] = {}
    for a, b in Friendship.objects.filter(game=game).values_list("player_a", "player_b").iterator(chunk_size=10_000):
        sets.setdefault(a, set()).add(b)
        sets.setdefault(b, set()).add(a)
    stale = [str(k) for k in redis.scan_iter(match=keys.friends_key(game.slug, "*"), count=1000)]
    pipe = redis.pipeline(transaction=False)
    if stale:
        pipe.delete(*stale)
    for player_id, friends in sets.items():
        pipe.sadd(keys.friends_key(game.slug, player_id), *friends)
    pipe.execute()


def hidden_rebuild(*, game: Game) -> None:
    """The game's hidden and deleted players from the players table into Redis."""
    hidden = list(
        Player.objects.filter(game=game)
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .values_list("player_id", flat=True)
    )
    pipe = client().pipeline(transaction=True)
    pipe.delete(keys.hidden_key(game.slug))
    if hidden:
        pipe.sadd(keys.hidden_key(game.slug), *hidden)
    pipe.execute()
    hidden_slots_rebuild(game=game.slug, hidden=hidden)
