"""The board writer: scores onto the Redis boards, through the Lua scripts beside this module.

- `events_apply`: results onto every board they touch, at most once each. Events are grouped by
  the boards they land on (season, region, day, dimensions); each group is one EVALSHA of
  `lua/apply_events.lua`, every group of a batch pipelined in one round trip. The script skips
  events whose dedup marker exists, so a redelivered task or a re-run script counts nothing twice.
  The competition boards (tournament periods, league cohorts) given with the events go in the same
  round trip: on one Redis many boards a call (`lua/apply_boards.lua`: a league's opening rush
  puts nearly every result of a batch on its own cohort board), on a cluster one board a call (a
  call's keys share a slot; each board has its own hash tag).
- `player_scores_write`: a correction. One player's scores, re-derived by the caller, written as
  absolute values (`lua/correct_player.lua`) together with the dedup markers of the results those
  values include, so a queued apply of one of them cannot count it again.
- Dedup markers, display names and the hidden set, which the scripts read.

The caller (scoring) owns the ledger and its `applied_at`; this module knows only Redis.
"""

import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, NamedTuple

from redis import Redis
from redis.cluster import RedisCluster
from redis.commands.core import Script

from common.redis import boards_client, client, lua_path, lua_script, on_cluster
from seasons.models import Game, Season
from seasons.selectors import seasons_by_id

from . import keys
from .codec import ScoreCodec, reached_seconds
from .keys import BoardRef
from .kinds import KINDS
from .ranking import needs_distinct_points
from .scatter import scatter
from .sharded import shard_observe
from .slots import hidden_slots_change
from .slots import hidden_slots_fill as slots_fill

APPLY_SCRIPT = lua_path(__file__, "ranking_lib.lua", "apply_events.lua")
BOARDS_SCRIPT = lua_path(__file__, "ranking_lib.lua", "apply_boards.lua")
CORRECT_SCRIPT = lua_path(__file__, "ranking_lib.lua", "correct_player.lua")


class EventRow(NamedTuple):
    """One accepted result, as the boards need it. (A named tuple: the worker makes thousands a
    task, at a third of a frozen dataclass's cost.)"""

    id: int
    season_id: int
    player_id: str
    points: int
    accepted_at: datetime
    day: date
    region: str | None
    extra_boards: tuple[str, ...] = ()


@dataclass
class ApplyReport:
    applied: int = 0
    skipped: int = 0
    paused: int = 0
    overflow: int = 0
    on_boards: list[int] = field(default_factory=list)  # ids now on the boards (or found there)
    refused: list[int] = field(default_factory=list)  # ids past the season's exact capacity

    def counts(self) -> dict[str, int]:
        return {"applied": self.applied, "skipped": self.skipped, "paused": self.paused, "overflow": self.overflow}


class GamePaused(RuntimeError):
    """The game's boards are being swapped by a rebuild; try again in a moment."""


def boards_for(
    *, game: str, season_id: int, day: date, region: str | None, extra: Iterable[str] = ()
) -> tuple[list[BoardRef], list[BoardRef]]:
    """The sum boards and best boards one result lands on: global, its region's, and those of the
    game's extra dimensions (`country-de`), for every board kind."""
    regions = [keys.GLOBAL] + ([region] if region else []) + [e for e in extra if e != region]
    sums: list[BoardRef] = []
    bests: list[BoardRef] = []
    for reg in regions:
        for kind in KINDS.values():
            (bests if kind.best else sums).append(BoardRef(game, season_id, kind.name, reg, kind.period_of(day)))
    return sums, bests


def ttl_s(board: str) -> int:
    return KINDS[board].ttl_s()


SEASON_META_TTL_S = 5.0
_season_meta_cache: dict[int, tuple[float, Season, Game]] = {}


def _season_meta(season_ids: set[int]) -> dict[int, tuple[Season, Game]]:
    """Each season with its game, as the writer needs them (the time bits, the start and the board
    shards of the season, which never change while its boards live; the game's slug and tie rule).
    Kept for SEASON_META_TTL_S in the process: a worker applies tasks of a few dozen events under
    single-result POSTs, and the query was a fifth of its CPU. A game's tie rule changed in the
    admin reaches the writer within those seconds (its boards need a rebuild anyway)."""
    clock = time.monotonic()
    found = {
        sid: (season, game)
        for sid, (at, season, game) in _season_meta_cache.items()
        if sid in season_ids and clock - at < SEASON_META_TTL_S
    }
    missing = season_ids - found.keys()
    if missing:
        for season_id, season in seasons_by_id(season_ids=missing).items():
            _season_meta_cache[season_id] = (clock, season, season.game)
            found[season_id] = (season, season.game)
    return found


@dataclass(frozen=True)
class CompetitionBoard:
    """A competition's board (a tournament period), written by the same apply script as the season
    boards, in its own call: its key and hash tag come from the competition's keys module, its
    dedup markers lie in that tag's slot (so a result counts once on it, whatever is redelivered,
    apart from its season boards' markers), its scores use the codec of `time_bits` from `starts_at`."""

    game: str
    key: str
    tag: str  # the hash tag, braces included
    starts_at: datetime
    time_bits: int
    best: bool  # the best single result (else the sum)
    ascending: bool  # lower is better (best only)
    dense: bool
    ttl_s: int


def events_apply(
    *,
    events: list[EventRow],
    dedup_ttl_s: int,
    chunk: int = 2000,
    competitions: Mapping[CompetitionBoard, list[EventRow]] | None = None,
) -> ApplyReport:
    """Apply results to the boards (see the module docstring), and to the competition boards the
    results counted on (`competitions`: each board's events). Paused (rebuilding) games apply
    nothing: those events are reported `paused`, for the caller to retry. One round trip for every
    group (on a cluster, one per node: scatter.py); the boards changed go to the live publisher."""
    report = ApplyReport()
    if not events:
        return report
    meta = _season_meta({e.season_id for e in events})
    groups = _groups_by_boards(events, meta)
    redis = boards_client()
    script = lua_script(APPLY_SCRIPT)
    cluster = isinstance(redis, RedisCluster)
    calls, slots = _script_calls(groups, meta, dedup_ttl_s=dedup_ttl_s, chunk=chunk, cluster=cluster)
    whole: dict[str, set[str]] = defaultdict(set)  # a competition board holds every player in its slot
    if cluster:
        # One slot a call: each competition board's results in calls of their own.
        extra = _competition_calls(competitions or {}, dedup_ttl_s=dedup_ttl_s, chunk=chunk)
        for board in competitions or {}:
            whole[board.game].add(board.tag)
        replies = _script_calls_run(redis, script, calls + extra, slots, whole, timed=len(calls))
        changed = _replies_count(calls, replies[: len(calls)], report)
        changed |= _competition_replies(extra, replies[len(calls) :], report)
    else:
        # One Redis: many competition boards a call (a league's opening rush: a cohort per result).
        batched = _boards_calls(competitions or {}, dedup_ttl_s=dedup_ttl_s, chunk=chunk)
        replies = _script_calls_run(redis, script, calls, slots, whole, timed=len(calls), batched=batched)
        changed = _replies_count(calls, replies[: len(calls)], report)
        changed |= _boards_replies(batched, replies[len(calls) :], report)
    boards_touched(changed)
    return report


def _competition_calls(
    competitions: Mapping[CompetitionBoard, list[EventRow]], *, dedup_ttl_s: int, chunk: int
) -> "list[_ScriptCall]":
    """The apply script's calls for the competition boards: one board each (a sum board or a best
    board), the dedup markers in the board's slot; the pause flag and hidden set as the season
    boards of one Redis read them (on a cluster, their copies in the board's slot)."""
    calls: list[_ScriptCall] = []
    prefix = keys.deployment_prefix()
    cluster = on_cluster()
    for board, rows in competitions.items():
        codec = ScoreCodec(board.time_bits)
        start_us = keys.epoch_micros(board.starts_at)
        flags = board.tag if cluster else ""
        n_sum, n_best = (0, 1) if board.best else (1, 0)
        for start in range(0, len(rows), chunk):
            script_keys = [keys.pause_key(board.game, flags), keys.hidden_key(board.game, flags), board.key]
            if board.dense:
                script_keys.append(keys.distinct_key(board.key))
            script_keys.append(keys.version_key(board.key))
            args: list[Any] = [codec.time_span, codec.max_points, n_sum, n_best, int(board.dense), dedup_ttl_s]
            args.append(board.ttl_s)
            dedup_index: dict[str, int] = {}
            for e in rows[start : start + chunk]:
                dkey, dfield = keys.competition_dedup_location(e.id, board.tag, prefix, cluster=cluster)
                if dkey not in dedup_index:
                    script_keys.append(dkey)
                    dedup_index[dkey] = len(script_keys)
                micros = keys.epoch_micros(e.accepted_at)
                reached = min(reached_seconds(season_start_us=start_us, accepted_us=micros), codec.max_reached_s)
                points = codec.stored_points(e.points, ascending=board.ascending)
                args += [
                    e.id,
                    dedup_index[dkey],
                    dfield,
                    e.player_id,
                    points,
                    reached,
                    keys.dedup_tag_micros(e.id, micros),
                ]
            calls.append(_ScriptCall(rows[start : start + chunk], [board.key], script_keys, args))
    return calls


def _competition_replies(calls: "list[_ScriptCall]", replies: list[Any], report: ApplyReport) -> set[str]:
    """The competition calls' replies: the boards that changed. An event of a paused call (a
    rebuild) is taken off `report.on_boards`, for the relay to send again."""
    changed: set[str] = set()
    paused: set[int] = set()
    for (part, board_keys, _, _), reply in zip(calls, replies, strict=True):
        if reply[0] == "paused":
            paused.update(e.id for e in part)
        elif int(reply[1]):
            changed.update(board_keys)
    if paused:
        report.on_boards = [event_id for event_id in report.on_boards if event_id not in paused]
        report.paused += len(paused)
    return changed


class _BoardsCall(NamedTuple):
    """One EVALSHA of `lua/apply_boards.lua`: many competition boards of one game, each with its
    results (a segment), on one Redis."""

    segments: list[tuple[str, list[EventRow]]]  # (board key, its results), in the script's order
    script_keys: list[str]
    args: list[Any]


def _boards_calls(
    competitions: Mapping[CompetitionBoard, list[EventRow]], *, dedup_ttl_s: int, chunk: int
) -> list[_BoardsCall]:
    """The competition boards' results in calls of `lua/apply_boards.lua` (its header has KEYS and
    ARGV), one game a call, about `chunk` results a call: what `_competition_calls` sends one board
    a call, with the same keys (the dedup markers in each board's slot) and values. One Redis only."""
    by_game: dict[str, list[tuple[CompetitionBoard, list[EventRow]]]] = defaultdict(list)
    for board, rows in competitions.items():
        if rows:
            by_game[board.game].append((board, rows))
    calls: list[_BoardsCall] = []
    prefix = keys.deployment_prefix()
    for game, boards in by_game.items():
        builder = _BoardsCallBuilder(game, dedup_ttl_s=dedup_ttl_s, prefix=prefix)
        for board, rows in boards:
            for start in range(0, len(rows), chunk):
                part = rows[start : start + chunk]
                if builder.events and builder.events + len(part) > chunk:
                    calls.append(builder.call())
                    builder = _BoardsCallBuilder(game, dedup_ttl_s=dedup_ttl_s, prefix=prefix)
                builder.add(board, part)
        if builder.events:
            calls.append(builder.call())
    return calls


class _BoardsCallBuilder:
    """One `_BoardsCall` in the making: its keys, each listed once (a board with its companion and
    version after it), the boards' kinds (what the codec and the board's rules make of a result),
    and the values."""

    def __init__(self, game: str, *, dedup_ttl_s: int, prefix: str) -> None:
        self.script_keys: list[str] = [keys.pause_key(game), keys.hidden_key(game)]
        self.segments: list[tuple[str, list[EventRow]]] = []
        self.events = 0
        self._dedup_ttl_s = dedup_ttl_s
        self._values: list[Any] = []
        self._index: dict[str, int] = {}
        self._prefix = prefix
        self._kinds: dict[tuple[int, datetime, bool, bool, int], tuple[int, ScoreCodec, int]] = {}

    def _key(self, key: str) -> int:
        index = self._index.get(key)
        if index is None:
            self.script_keys.append(key)
            index = self._index[key] = len(self.script_keys)
        return index

    def _board(self, board: CompetitionBoard) -> int:
        """The board's key index; its companion and version follow it in KEYS."""
        index = self._index.get(board.key)
        if index is None:
            index = self._key(board.key)
            if board.dense:
                self.script_keys.append(keys.distinct_key(board.key))
            self.script_keys.append(keys.version_key(board.key))
        return index

    def add(self, board: CompetitionBoard, rows: list[EventRow]) -> None:
        shape = (board.time_bits, board.starts_at, board.best, board.dense, board.ttl_s)
        found = self._kinds.get(shape)
        if found is None:
            found = self._kinds[shape] = (
                len(self._kinds) + 1,
                ScoreCodec(board.time_bits),
                keys.epoch_micros(board.starts_at),
            )
        kind, codec, start_us = found
        max_reached = codec.max_reached_s
        values = self._values
        values += [self._board(board), kind, len(rows)]
        for e in rows:
            dkey, dfield = keys.competition_dedup_location(e.id, board.tag, self._prefix, cluster=False)
            micros = keys.epoch_micros(e.accepted_at)
            reached = min(reached_seconds(season_start_us=start_us, accepted_us=micros), max_reached)
            values += [
                e.id,
                self._key(dkey),
                dfield,
                e.player_id,
                codec.stored_points(e.points, ascending=board.ascending),
                reached,
                keys.dedup_tag_micros(e.id, micros),
            ]
        self.segments.append((board.key, rows))
        self.events += len(rows)

    def call(self) -> _BoardsCall:
        args: list[Any] = [self._dedup_ttl_s, len(self._kinds)]
        for (_, _, best, dense, ttl_s), (_, codec, _) in self._kinds.items():  # in kind order
            args += [codec.time_span, codec.max_points, int(best), int(dense), ttl_s]
        return _BoardsCall(self.segments, self.script_keys, args + self._values)


def _boards_replies(calls: list[_BoardsCall], replies: list[Any], report: ApplyReport) -> set[str]:
    """`_competition_replies` for the batched calls: the boards that changed; a paused call's
    results taken off `report.on_boards`."""
    changed: set[str] = set()
    paused: set[int] = set()
    for call, reply in zip(calls, replies, strict=True):
        if reply[0] == "paused":
            paused.update(e.id for _, rows in call.segments for e in rows)
            continue
        for (board_key, _), applied in zip(call.segments, reply[1:], strict=True):
            if int(applied):
                changed.add(board_key)
    if paused:
        report.on_boards = [event_id for event_id in report.on_boards if event_id not in paused]
        report.paused += len(paused)
    return changed


_GroupKey = tuple[int, date, str | None, tuple[str, ...], int | None]  # season, day, region, extras, shard


class _ScriptCall(NamedTuple):
    """One EVALSHA of the apply script: a chunk of one group's events."""

    events: list[EventRow]
    board_keys: list[str]  # the whole boards (live pushes are per whole board)
    script_keys: list[str]
    args: list[Any]


def _groups_by_boards(events: list[EventRow], meta: dict[int, tuple[Season, Game]]) -> dict[_GroupKey, list[EventRow]]:
    """One group per set of boards; with board shards, per shard too (one script's keys share a
    Redis Cluster slot: boards/keys.py)."""
    groups: dict[_GroupKey, list[EventRow]] = defaultdict(list)
    for e in events:
        shards = meta[e.season_id][0].board_shards
        shard = keys.shard_of(e.player_id, shards) if shards > 1 else None
        groups[(e.season_id, e.day, e.region, e.extra_boards, shard)].append(e)
    return groups


def _script_calls(
    groups: dict[_GroupKey, list[EventRow]],
    meta: dict[int, tuple[Season, Game]],
    *,
    dedup_ttl_s: int,
    chunk: int,
    cluster: bool,
) -> tuple[list[_ScriptCall], dict[str, set[str]]]:
    """Every group's script calls, and on a cluster the slots written, by game."""
    calls: list[_ScriptCall] = []
    slots: dict[str, set[str]] = defaultdict(set)  # game -> the slots written (on a cluster)
    prefix = keys.deployment_prefix()
    for (season_id, day, region, extra, shard), rows in groups.items():
        season, game = meta[season_id]
        sums, bests = _group_boards(game=game, season_id=season_id, day=day, region=region, extra=extra, shard=shard)
        # The group's first board's slot: "" on one Redis; on a cluster every key of its calls shares it.
        slot = (sums or bests)[0].dedup_slot
        if cluster:
            slots[game.slug].add(slot)
        calls += _group_calls(
            rows,
            season=season,
            game=game,
            sums=sums,
            bests=bests,
            slot=slot,
            prefix=prefix,
            dedup_ttl_s=dedup_ttl_s,
            chunk=chunk,
        )
    return calls, slots


def _group_boards(
    *, game: Game, season_id: int, day: date, region: str | None, extra: tuple[str, ...], shard: int | None
) -> tuple[list[BoardRef], list[BoardRef]]:
    """The sum boards and best boards of one group (`boards_for`), in the group's shard."""
    sums, bests = boards_for(game=game.slug, season_id=season_id, day=day, region=region, extra=extra)
    if game.ascending:  # lower is better: every board keeps the best (lowest) value of its window
        sums, bests = [], sums + bests
    if shard is not None:
        sums = [replace(b, shard=shard) for b in sums]
        bests = [replace(b, shard=shard) for b in bests]
    return sums, bests


def _group_calls(
    rows: list[EventRow],
    *,
    season: Season,
    game: Game,
    sums: list[BoardRef],
    bests: list[BoardRef],
    slot: str,
    prefix: str,
    dedup_ttl_s: int,
    chunk: int,
) -> "list[_ScriptCall]":
    """One group's script calls, `chunk` events each (lua/apply_events.lua's header has KEYS and
    ARGV): the pause flag, the hidden set, the boards (with the dense rule their companions), their
    versions, then each dedup hash as the events need it; ARGV the codec's figures and the boards'
    lifetimes, then seven values per event."""
    codec = ScoreCodec(season.time_bits)
    dense = needs_distinct_points(game.tie_rule)
    boards = sums + bests
    start_us = keys.epoch_micros(season.starts_at)
    max_reached = codec.max_reached_s
    calls: list[_ScriptCall] = []
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        script_keys: list[str] = [keys.pause_key(game.slug, slot), keys.hidden_key(game.slug, slot)]
        script_keys += [b.key for b in boards]
        if dense:
            script_keys += [b.distinct_key for b in boards]
        script_keys += [b.version_key for b in boards]
        dedup_index: dict[str, int] = {}
        args: list[Any] = [codec.time_span, codec.max_points, len(sums), len(bests), int(dense), dedup_ttl_s]
        args += [ttl_s(b.board) for b in boards]
        for e in part:
            dkey, dfield = keys.dedup_location(e.id, slot, prefix)
            index = dedup_index.get(dkey)
            if index is None:
                script_keys.append(dkey)
                index = dedup_index[dkey] = len(script_keys)
            micros = keys.epoch_micros(e.accepted_at)
            reached = reached_seconds(season_start_us=start_us, accepted_us=micros)
            args += [
                e.id,
                index,
                dfield,
                e.player_id,
                codec.stored_points(e.points, ascending=game.ascending),
                min(reached, max_reached),
                keys.dedup_tag_micros(e.id, micros),
            ]
        calls.append(_ScriptCall(part, [b.whole.key for b in boards], script_keys, args))
    return calls


def _script_calls_run(
    redis: "Redis | RedisCluster",
    script: Script,
    calls: list[_ScriptCall],
    slots: dict[str, set[str]],
    whole: dict[str, set[str]],
    *,
    timed: int,
    batched: list[_BoardsCall] | None = None,
) -> list[Any]:
    """The calls' replies, in order: on one Redis every call in one pipeline (one round trip); on a
    cluster each node's calls pipelined (scatter.py), after the pause flag and hidden set are
    copied into the slots written (`whole`: a competition board's, which holds every player). The
    first `timed` calls (the season boards') are timed per shard. `batched` (one Redis only): calls of
    `lua/apply_boards.lua`, pipelined after `calls`, their replies after theirs."""
    if isinstance(redis, RedisCluster):
        if batched:
            raise ValueError("a batched boards call spans many slots: not on a cluster")
        for game_slug in set(slots) | set(whole):
            slots_fill(game=game_slug, slots=slots.get(game_slug, ()), whole=whole.get(game_slug, ()))
        return scatter(
            redis,
            [(script, call.script_keys, call.args) for call in calls],
            hedge=False,
            fallback=lambda index: script(keys=calls[index].script_keys, args=calls[index].args, client=redis),
            # KEYS[3] is the group's first board (the pause flag and hidden set come first).
            observe=lambda index, seconds: (
                shard_observe(calls[index].script_keys[2], "apply", seconds) if index < timed else None
            ),
        )
    pipe = redis.pipeline(transaction=False)
    for call in calls:
        script(keys=call.script_keys, args=call.args, client=pipe)
    if batched:
        boards_script = lua_script(BOARDS_SCRIPT)
        for batch in batched:
            boards_script(keys=batch.script_keys, args=batch.args, client=pipe)
    replies: list[Any] = pipe.execute()
    return replies


def _replies_count(calls: list[_ScriptCall], replies: list[Any], report: ApplyReport) -> set[str]:
    """Each call's reply counted into `report` ("paused", or applied, skipped and the ids refused
    past the season's capacity); returns the whole boards that changed."""
    changed: set[str] = set()
    for (part, board_keys, _, _), reply in zip(calls, replies, strict=True):
        if reply[0] == "paused":
            report.paused += len(part)
            continue
        if int(reply[1]):
            changed.update(board_keys)
        report.applied += int(reply[1])
        report.skipped += int(reply[2])
        refused = {int(x) for x in reply[3:]}
        report.overflow += len(refused)
        report.refused.extend(refused)
        report.on_boards.extend(e.id for e in part if e.id not in refused)
    return changed


def boards_touched(board_keys: Iterable[str]) -> None:
    """Tell the live publisher (events.py) that these boards changed: one push per board per
    second at most."""
    touched = list(board_keys)
    if touched:
        client().sadd(keys.dirty_key(), *touched)


@dataclass(frozen=True)
class ScoreWrite:
    """A correction's value for one board: the new encoded score (None removes the player), and
    the lifetime to give the board if this write creates it (0: none)."""

    key: str
    score: int | None
    ttl_s: int = 0


def player_scores_write(
    *,
    game: Game,
    season: Season,
    player_id: str,
    writes: list[ScoreWrite],
    included_events: list[keys.MarkedEvent],
    dedup_ttl_s: int,
) -> int:
    """Write one player's re-derived scores on one season's boards as absolute values, atomically,
    with the dedup markers of `included_events` (results the new values already hold). Returns
    the number of boards changed; raises GamePaused while a rebuild swaps the game's keys."""
    codec = ScoreCodec(season.time_bits)
    dense = needs_distinct_points(game.tie_rule)
    board_keys = [w.key for w in writes]
    # One player's boards of one season: one slot on a cluster ("" on one Redis).
    slot = BoardRef.from_key(board_keys[0]).dedup_slot if board_keys else ""
    script_keys = [
        keys.pause_key(game.slug, slot),
        *board_keys,
        *(keys.distinct_key(k) for k in board_keys),
        *(keys.version_key(k) for k in board_keys),
    ]
    marks: list[int | str] = []
    index: dict[str, int] = {}
    for event_id, accepted_at, _ in included_events:
        dkey, dfield = keys.dedup_location(event_id, slot)
        if dkey not in index:
            script_keys.append(dkey)
            index[dkey] = len(script_keys)
        marks += [index[dkey], dfield, keys.dedup_tag(event_id, accepted_at)]
    values = ["" if w.score is None else str(w.score) for w in writes]
    ttls = [w.ttl_s for w in writes]
    redis = boards_client()
    reply = lua_script(CORRECT_SCRIPT)(
        keys=script_keys,
        args=[player_id, len(writes), codec.time_span, int(dense), *values, *ttls, *marks],
        client=redis,
    )
    if reply[0] == "paused":
        raise GamePaused(game.slug)
    changed = int(reply[1])
    if changed:
        boards_touched(BoardRef.from_key(k).whole.key for k in board_keys)
    if index:
        pipe = redis.pipeline(transaction=False)
        for dkey in index:
            pipe.expire(dkey, dedup_ttl_s)
        pipe.execute()
    return changed


def competition_scores_write(
    *,
    board: CompetitionBoard,
    scores: Mapping[str, int | None],
    included: Mapping[str, list[tuple[int, datetime]]],
    dedup_ttl_s: int,
    pause_held: bool = False,
) -> int | None:
    """Write players' re-derived scores on a competition board as absolute values (None removes
    the player), each player's in one call of the correction script with the dedup markers (in the
    board's slot) of the results (event id, accepted at) the value includes, so a queued apply of
    one of them cannot count it again. Returns the number of players changed, or None when the
    game is paused (a rebuild swaps its keys: nothing written, the caller tries again later).
    `pause_held`: the caller is the rebuild that paused the game, and writes regardless."""
    if not scores:
        return 0
    codec = ScoreCodec(board.time_bits)
    flags = board.tag if on_cluster() else ""
    # The script's pause flag: the game's, or for the rebuild holding it a key never set (in the
    # board's slot, as the script's other keys).
    pause = f"{board.key}:unpaused" if pause_held else keys.pause_key(board.game, flags)
    prefix = keys.deployment_prefix()
    redis = boards_client()
    script = lua_script(CORRECT_SCRIPT)
    pipe = redis.pipeline(transaction=False)
    cluster = isinstance(redis, RedisCluster)  # no scripts in a cluster's pipeline: one call each
    replies: list[Any] = []
    marked: set[str] = set()
    for player_id, score in scores.items():
        script_keys = [
            pause,
            board.key,
            keys.distinct_key(board.key),
            keys.version_key(board.key),
        ]
        marks: list[int | str] = []
        for event_id, accepted_at in included.get(player_id, []):
            dkey, dfield = keys.competition_dedup_location(event_id, board.tag, prefix, cluster=cluster)
            if dkey not in script_keys:
                script_keys.append(dkey)
            marked.add(dkey)
            marks += [script_keys.index(dkey) + 1, dfield, keys.dedup_tag(event_id, accepted_at)]
        value = "" if score is None else str(score)
        args = [player_id, 1, codec.time_span, int(board.dense), value, board.ttl_s, *marks]
        reply = script(keys=script_keys, args=args, client=redis if cluster else pipe)
        if cluster:
            replies.append(reply)
    if not cluster:
        replies = pipe.execute()
    if any(reply[0] in (b"paused", "paused") for reply in replies):
        return None
    changed = sum(int(reply[1]) for reply in replies)
    if changed:
        boards_touched([board.key])
    if marked:
        for dkey in marked:
            pipe.expire(dkey, dedup_ttl_s)
        pipe.execute()
    return changed


def dedup_marked(*, events: list[keys.MarkedEvent]) -> set[int]:
    """The ids of the results among these whose dedup marker is set (with their own tag): the
    boards hold them (or a script that applied them has run), whatever their `applied_at` says yet."""
    if not events:
        return set()
    pipe = boards_client().pipeline(transaction=False)
    for event_id, _, slot in events:
        pipe.hget(*keys.dedup_location(event_id, slot))
    return {
        event_id
        for (event_id, accepted_at, _), tag in zip(events, pipe.execute(), strict=True)
        if tag == keys.dedup_tag(event_id, accepted_at)
    }


def dedup_clear(*, events: list[keys.MarkedEvent]) -> None:
    """Forget that results were applied: the next apply of each counts it (a withheld or reinstated
    result, whose old contribution a correction already took off the boards)."""
    if not events:
        return
    pipe = boards_client().pipeline(transaction=False)
    for event in events:
        pipe.hdel(*keys.dedup_location(event.event_id, event.slot))
    pipe.execute()


def names_store(*, game: str, names: Mapping[str, str]) -> None:
    """Display names into the game's names hash (read by the board scripts), and a new names
    version (cached top-N answers show names)."""
    if names:
        pipe = boards_client().pipeline(transaction=not on_cluster())  # two slots on a cluster
        pipe.hset(keys.names_key(game), mapping=dict[Any, Any](names))
        pipe.incr(keys.names_version_key(game))
        pipe.execute()


def names_fill(*, game: str, names: Mapping[str, str]) -> None:
    """`names_store` for players who have no name in Redis yet: a late copy (written again after a
    Redis outage) never overwrites a name set since."""
    if names:
        pipe = boards_client().pipeline(transaction=not on_cluster())
        for player_id, name in names.items():
            pipe.hsetnx(keys.names_key(game), player_id, name)
        pipe.incr(keys.names_version_key(game))
        pipe.execute()


def name_forget(*, game: str, player_id: str) -> None:
    pipe = boards_client().pipeline(transaction=not on_cluster())
    pipe.hdel(keys.names_key(game), player_id)
    pipe.incr(keys.names_version_key(game))
    pipe.execute()


def friends_store(*, game: str, player_id: str, friend_id: str, together: bool) -> None:
    """A friendship into (or out of) both players' friend sets, read by the friends script."""
    pipe = client().pipeline(transaction=True)
    if together:
        pipe.sadd(keys.friends_key(game, player_id), friend_id)
        pipe.sadd(keys.friends_key(game, friend_id), player_id)
    else:
        pipe.srem(keys.friends_key(game, player_id), friend_id)
        pipe.srem(keys.friends_key(game, friend_id), player_id)
    pipe.execute()


def friends_forget(*, game: str, player_id: str, friend_ids: list[str]) -> None:
    """A deleted account's friend set goes, and it leaves every friend's set."""
    pipe = client().pipeline(transaction=True)
    pipe.delete(keys.friends_key(game, player_id))
    for friend_id in friend_ids:
        pipe.srem(keys.friends_key(game, friend_id), player_id)
    pipe.execute()


def hidden_add(*, game: str, player_ids: list[str]) -> None:
    """Hidden or deleted: the writer skips their results and corrections take them off."""
    if player_ids:
        client().sadd(keys.hidden_key(game), *player_ids)
        hidden_slots_change(game=game, player_ids=player_ids, hidden=True)


def hidden_remove(*, game: str, player_ids: list[str]) -> None:
    if player_ids:
        client().srem(keys.hidden_key(game), *player_ids)
        hidden_slots_change(game=game, player_ids=player_ids, hidden=False)
