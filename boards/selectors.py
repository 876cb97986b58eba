"""The read path: top, a player's standing, the players around them, friends and the score
distribution, from Redis and in-process state.

Each read resolves the board once (`board_view`: the game's catalog from Redis, seasons/catalog.py)
and runs one Lua script (boards/lua/), so an answer never mixes two moments and PostgreSQL is not
on the way. Ranks follow the game's tie rule and are computed from counts.

Cached answers (the top N, the distribution) are kept under the board's version, which the writer
and the correction script bump in the same atomic call as the data (and, for the top N, the game's
names version): a read sends the version it holds and the script answers "unchanged" or the new
answer. So once any read shows a result, every later read of that board shows it too, in every
process; nothing is cached by a clock.

Each script's call (`*_call`: keys and arguments) and reply (`*_parse`) are plain functions shared
by the Django views (the sync functions here) and the fast ASGI path (fastpath.py).

Frozen seasons answer from their final standings in PostgreSQL (standings.py).
"""

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from django.db.models import Q, QuerySet

from common.db import rows_by_keys
from common.operations import digits_only
from common.redis import client, lua_path, lua_script, on_cluster
from seasons.catalog import Catalog, catalog_get
from seasons.models import Game, Season
from seasons.periods import BadPeriod
from seasons.selectors import season_current

from . import keys
from .codec import ScoreCodec
from .gone import Gone, board_gone
from .keys import GLOBAL, BoardRef
from .kinds import BOARD_NAMES, KINDS, NO_PERIOD
from .models import Friendship, FrozenStanding, Player, SeasonRegion
from .ranking import Above, counted_above, rank_ahead, ranks_for, ranks_from
from .sharded import ShardedBoard, sharded
from .tiers import Tiers, tiers_of

# `global`, a region, or an extra dimension's board (`country-de`): the query's `region`
REGION_PATTERN = r"^(global|[a-z0-9-]{2,40})$"
REGION_RE = re.compile(REGION_PATTERN)
MAX_FRIENDS = 500
EXACT_RANKS = 10_000  # the percentile is exact down to this rank, then read from the histogram
DISTRIBUTION_BUCKETS = 100

TOP_SCRIPT = lua_path(__file__, "ranking_lib.lua", "top.lua")
AROUND_SCRIPT = lua_path(__file__, "ranking_lib.lua", "around.lua")
PLAYER_SCRIPT = lua_path(__file__, "ranking_lib.lua", "player.lua")
FRIENDS_SCRIPT = lua_path(__file__, "ranking_lib.lua", "friends.lua")
DISTRIBUTION_SCRIPT = lua_path(__file__, "ranking_lib.lua", "distribution.lua")
REGIONS_SCRIPT = lua_path(__file__, "regions.lua")

Entry = dict[str, Any]
Call = tuple[list[str], list[Any]]  # a script's KEYS and ARGV


class UnknownGame(LookupError):
    pass


class UnknownBoard(LookupError):
    pass


class UnknownSeason(LookupError):
    pass


class BadQuery(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class BoardView:
    """A resolved board: which season, period and region a reader means, and how to read it."""

    game: Game
    season: Season
    board: str
    region: str
    period: str | None

    @cached_property
    def ref(self) -> BoardRef:
        return BoardRef(self.game.slug, self.season.id, self.board, self.region, self.period or NO_PERIOD)

    @property
    def frozen(self) -> bool:
        """Frozen and archived seasons answer from their final standings in PostgreSQL."""
        return self.season.frozen_at is not None

    def standings(self) -> QuerySet[FrozenStanding]:
        return FrozenStanding.objects.filter(
            season_id=self.season.id, board=self.board, region=self.region, period=self.period or NO_PERIOD
        )

    @cached_property
    def codec(self) -> ScoreCodec:
        return ScoreCodec(self.season.time_bits)

    @cached_property
    def tiers(self) -> Tiers | None:
        """The board kind's tiers: the game's, or for a frozen season those in force at its freeze."""
        configured = self.season.frozen_tiers if self.frozen else self.game.tiers
        return tiers_of(configured, self.board, ascending=self.game.ascending)

    def shown(self, stored_points: int) -> int:
        """The value a reader sees (lower-is-better boards store capacity minus the value)."""
        return self.codec.shown_points(stored_points, ascending=self.game.ascending)

    def keys(self) -> list[str]:
        """The one-set read scripts' KEYS: the board, its distinct-points companion, the names."""
        return self._keys

    @cached_property
    def _keys(self) -> list[str]:
        ref = self.ref
        return [ref.key, ref.distinct_key, keys.names_key(self.game.slug)]


def board_resolve(
    *,
    game: Game,
    board: str,
    region: str | None,
    season: str | None,
    period: str | None,
    now: datetime,
    seasons: list[Season],
    pointer_id: int | None,
) -> BoardView:
    """Which season, period and region a reader means. The season is resolved once per request,
    so one answer never mixes two seasons."""
    kind = KINDS.get(board)
    if kind is None:
        raise UnknownBoard(board)
    region = region or GLOBAL
    if not REGION_RE.match(region):
        raise BadQuery("region", "A region is 'global' or 2-40 characters from [a-z0-9-].")
    if season:
        if not digits_only(season):
            raise BadQuery("season", "A season id, as listed by /seasons.")
        chosen = next((s for s in seasons if s.id == int(season)), None)
        if chosen is None:
            raise UnknownSeason(season)
    else:
        chosen = season_current(game=game, now=now, seasons=seasons, pointer_id=pointer_id)
        if chosen is None:
            raise UnknownSeason("current")
    label: str | None = None
    try:
        if kind.periodic:
            label = kind.period_checked(period) if period else kind.period_of(now)
        elif period:
            raise BadQuery("period", f"The {board} board has no period.")
    except BadPeriod as exc:
        raise BadQuery("period", str(exc)) from exc
    return BoardView(game=game, season=chosen, board=board, region=region, period=label)


def board_view(
    *, slug: str, board: str, region: str | None, season: str | None, period: str | None, now: datetime
) -> BoardView:
    """`board_resolve` for a game named by its slug, from the game's catalog in Redis."""
    catalog = catalog_get(slug=slug)
    if catalog.game is None:
        raise UnknownGame(slug)
    return board_resolve(
        game=catalog.game,
        seasons=catalog.seasons,
        pointer_id=catalog.pointer_id,
        board=board,
        region=region,
        season=season,
        period=period,
        now=now,
    )


# --------------------------------------------------------------------------- entries
def entry(*, rank: int, player_id: str, display_name: str | None, score: int) -> Entry:
    """A board entry as every read answers it (live, split, frozen; top, around, players): the
    one place its fields are put together (boards/serializers.py EntrySerializer renders it)."""
    return {"rank": rank, "player_id": player_id, "display_name": display_name, "score": score}


def friend_entry(*, rank: int, board_rank: int, player_id: str, display_name: str | None, score: int) -> Entry:
    """An entry of the friends read: ranked among the friends (`rank`) and on the board."""
    found = entry(rank=rank, player_id=player_id, display_name=display_name, score=score)
    return {"rank": rank, "board_rank": board_rank, **{k: v for k, v in found.items() if k != "rank"}}


# --------------------------------------------------------------------------- scripts: calls and replies
def _entries(flat: list[Any], view: BoardView) -> list[Entry]:
    """Flat script replies (member, points, rank, name, ...) as entries."""
    return [
        entry(rank=int(flat[i + 2]), player_id=flat[i], display_name=flat[i + 3], score=view.shown(int(flat[i + 1])))
        for i in range(0, len(flat), 4)
    ]


TotalOf = int | Callable[[], int]  # the board's visible players, or how to count them (one call)


def tiered(view: BoardView, entries: list[Entry], total: TotalOf, *, rank_key: str = "rank") -> list[Entry]:
    """The entries with their `tier` when the board has tiers (in place). `total` is counted only
    when a `percent` tier needs it and the read's own reply did not give it."""
    tiers = view.tiers
    if tiers is None or not entries:
        return entries
    count = 0
    if tiers.by == "percent":
        count = total() if callable(total) else total
    for e in entries:
        e["tier"] = tiers.of(score=e["score"], rank=e[rank_key], total=count)
    return entries


def board_total(view: BoardView) -> int:
    """The board's visible players: its sorted set's size (hidden players are never on a live
    board), the shards' sizes summed, or a frozen board's rows without the players gone since."""
    if view.frozen:
        return view.standings().count() - len(_frozen_gone(view))
    split = _split(view)
    if split is not None:
        return split.total()
    return int(client().zcard(view.ref.key))


def top_key(view: BoardView, n: int) -> tuple[Any, ...]:
    """A cached top's key: the board, n, and its tiers (a change of tiers changes no board version)."""
    return (view.ref.key, n, view.tiers)


def top_call(view: BoardView, n: int, known_version: str) -> Call:
    ref = view.ref
    script_keys = [*view.keys(), ref.version_key, keys.names_version_key(view.game.slug)]
    return script_keys, [n, view.codec.time_span, view.game.tie_rule, known_version]


def top_parse(view: BoardView, reply: list[Any]) -> tuple[str, list[Entry] | None]:
    """(version, entries), entries None when the caller's copy is current."""
    if len(reply) == 1:
        return str(reply[0]), None
    return str(reply[0]), tiered(view, _entries(reply[2:], view), int(reply[1]))


def player_call(view: BoardView, player_id: str) -> Call:
    return view.keys(), [player_id, view.codec.time_span, view.game.tie_rule, EXACT_RANKS, DISTRIBUTION_BUCKETS]


class Percentiled:
    """The percentile of an answer with `lower`, `total` and `approximate` (the player read, the
    rank of a score): exact, or from the histogram with its error."""

    lower: int
    total: int
    approximate: tuple[float, float] | None

    @property
    def percentile(self) -> float:
        return percentile_of(lower=self.lower, total=self.total, approximate=self.approximate)

    @property
    def percentile_error(self) -> float:
        """The bound in percentage points: 0 when exact, else the player's histogram bucket's share."""
        return self.approximate[1] if self.approximate is not None else 0.0


@dataclass(frozen=True)
class Standing(Percentiled):
    player_id: str
    display_name: str | None
    score: int
    rank: int
    total: int
    lower: int
    approximate: tuple[float, float] | None = None


def percentile_of(*, lower: int, total: int, approximate: tuple[float, float] | None) -> float:
    """Share of ranked players with a strictly lower (worse) score, in percent, floored to 0.1:
    exact for the top 10,000, otherwise read from the score histogram (docs/api.md)."""
    if approximate is not None:
        return approximate[0]
    if total == 0:
        return 0.0
    return (lower * 1000 // total) / 10


def histogram_share(*, below: int, own: int, total: int) -> tuple[float, float] | None:
    """(percentile, error) from the equi-depth histogram (the players in the buckets wholly below,
    in the own bucket), or None when the scripts answered -1: the percentile is exact."""
    if below < 0:
        return None
    return ((below * 1000 // total) / 10, -(-own * 1000 // total) / 10)


def player_parse(view: BoardView, player_id: str, reply: list[Any]) -> Standing | None:
    if not reply:
        return None
    points, rank, total, lower, name, below, own = reply
    total = int(total)
    approximate = histogram_share(below=int(below), own=int(own), total=total)
    return Standing(player_id, name, view.shown(int(points)), int(rank), total, int(lower), approximate)


def around_call(view: BoardView, player_id: str, r: int) -> Call:
    return view.keys(), [player_id, r, view.codec.time_span, view.game.tie_rule]


def around_parse(view: BoardView, reply: list[Any]) -> list[Entry] | None:
    return tiered(view, _entries(reply[1:], view), int(reply[0])) if reply else None


def friends_call(view: BoardView, player_id: str) -> Call:
    script_keys = [*view.keys(), keys.friends_key(view.game.slug, player_id)]
    return script_keys, [player_id, view.codec.time_span, view.game.tie_rule, MAX_FRIENDS]


def friends_parse(view: BoardView, reply: list[Any]) -> list[Entry]:
    """The members on the board in display order, ranked among themselves (`rank`) and on the
    whole board (`board_rank`)."""
    found = [(reply[i], int(reply[i + 1]), int(reply[i + 2]), reply[i + 3]) for i in range(0, len(reply), 4)]
    ranks = ranks_for([points for _, points, _, _ in found], view.game.tie_rule)
    entries = [
        friend_entry(rank=rank, board_rank=board_rank, player_id=m, display_name=name, score=view.shown(points))
        for (m, points, board_rank, name), rank in zip(found, ranks, strict=True)
    ]
    return tiered(view, entries, lambda: board_total(view), rank_key="board_rank")


def distribution_call(view: BoardView, known_version: str) -> Call:
    ref = view.ref
    return [ref.key, ref.version_key], [view.codec.time_span, DISTRIBUTION_BUCKETS, known_version]


def distribution_parse(view: BoardView, reply: list[Any]) -> tuple[str, dict[str, Any] | None]:
    """(version, the distribution), None when the caller's copy is current."""
    if len(reply) == 1:
        return str(reply[0]), None
    total = int(reply[1])
    buckets = [
        {"min_score": int(reply[i]), "max_score": int(reply[i + 1]), "players": int(reply[i + 2])}
        for i in range(2, len(reply), 3)
    ]
    if view.game.ascending:  # stored inverted: turn the buckets back into values, ascending
        buckets = [
            {"min_score": view.shown(b["max_score"]), "max_score": view.shown(b["min_score"]), "players": b["players"]}
            for b in reversed(buckets)
        ]
    return str(reply[0]), {"buckets": buckets, "total": total}


# --------------------------------------------------------------------------- the version-keyed caches
@dataclass
class Cached:
    """An answer at a board version, with its rendered bytes once someone rendered it."""

    version: str
    value: Any
    body: bytes | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # other renderings of it (the page's rows)


class _Flight:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Cached | None = None
        self.error: BaseException | None = None
        self.waiters = 0


class VersionedCache:
    """This process's copies of answers (top N, distribution), each under the board version it was
    read at. The caller always asks Redis whether its copy is current (the scripts take the version
    and answer "unchanged"), so a copy is never served after the board changed. Bounded: at most
    `maxsize` answers, least recently used first out. While nothing is cached for a key, one reader
    loads it and the others wait for that answer (single-flight)."""

    def __init__(self, maxsize: int = 1024) -> None:
        self._lock = threading.Lock()
        self._maxsize = maxsize
        self._entries: dict[Any, Cached] = {}
        self._inflight: dict[Any, _Flight] = {}

    def peek(self, key: Any) -> Cached | None:
        return self._entries.get(key)

    def values(self) -> list[Cached]:
        """The copies held now (tests)."""
        with self._lock:
            return list(self._entries.values())

    def put(self, key: Any, value: Cached) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = value
            while len(self._entries) > self._maxsize:
                self._entries.pop(next(iter(self._entries)))

    def get(self, key: Any, load: Callable[[Cached | None], Cached]) -> Cached:
        """The answer for `key`: `load(held)` asks Redis (with the held copy's version) and returns
        the held copy or a new one. Cold keys load once however many ask at the same time."""
        with self._lock:
            held = self._entries.get(key)
            leader = False
            flight = None
            if held is None:
                flight = self._inflight.get(key)
                if flight is None:
                    flight = self._inflight[key] = _Flight()
                    leader = True
                else:
                    flight.waiters += 1
        if held is not None:
            found = load(held)
            if found is not held:
                self.put(key, found)
            return found
        assert flight is not None
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            assert flight.value is not None
            return flight.value
        try:
            flight.value = load(None)
            self.put(key, flight.value)
            return flight.value
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                self._inflight.pop(key, None)
            flight.done.set()

    def __len__(self) -> int:
        return len(self._entries) + len(self._inflight)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


top_cache = VersionedCache()
distribution_cache = VersionedCache(maxsize=256)


# --------------------------------------------------------------------------- reads (sync: the Django path)
def _run(script: str, call: Call) -> Any:
    script_keys, args = call
    return lua_script(script)(keys=script_keys, args=args, client=client())


def _split(view: BoardView) -> ShardedBoard | None:
    """The board's shards when its season splits boards by player (board_shards > 1): its reads
    are scatter-gathers (sharded.py) whose replies take the one-set scripts' shapes below. On a
    Redis Cluster every board reads this way, a board of one set too: the one-set scripts read the
    names hash beside the board, in another slot there."""
    if view.season.board_shards <= 1 and not on_cluster():
        return None
    return sharded(
        view.ref,
        shards=view.season.board_shards,
        span=view.codec.time_span,
        rule=view.game.tie_rule,
        game=view.game.slug,
    )


def _split_top(view: BoardView, split: ShardedBoard, n: int, held: Cached | None) -> list[Any]:
    """top.lua's reply, from the shards."""
    version = split.version(names_version_key=keys.names_version_key(view.game.slug))
    if held is not None and held.version == version:
        return [version]
    total, rows = split.top(n)
    return [version, total, *_split_entries(split, rows)]


def _split_entries(split: ShardedBoard, rows: list[tuple[str, int, int]]) -> list[Any]:
    flat: list[Any] = []
    for (player, score, rank), name in zip(rows, split.names([p for p, _, _ in rows]), strict=True):
        flat += [player, split.points(score), rank, name]
    return flat


def board_top_cached(*, view: BoardView, n: int) -> Cached:
    """The top n of a live board, as a version-keyed cached answer."""
    split = _split(view)

    def load(held: Cached | None) -> Cached:
        if split is not None:
            reply = _split_top(view, split, n, held)
        else:
            reply = _run(TOP_SCRIPT, top_call(view, n, held.version if held else ""))
        version, entries = top_parse(view, reply)
        if entries is None and held is not None:
            return held
        return Cached(version=version, value=entries or [])

    return top_cache.get(top_key(view, n), load)


def board_top(*, view: BoardView, n: int, cached: bool = True) -> list[Entry]:
    """The top n (the live publisher reads it uncached)."""
    if view.frozen:
        return _frozen_top(view, n)
    if not cached:
        split = _split(view)
        reply = _split_top(view, split, n, None) if split else _run(TOP_SCRIPT, top_call(view, n, ""))
        _, entries = top_parse(view, reply)
        return entries or []
    value: list[Entry] = board_top_cached(view=view, n=n).value
    return value


def board_player(*, view: BoardView, player_id: str) -> Standing | None:
    if view.frozen:
        return _frozen_standing(view, player_id)
    split = _split(view)
    if split is not None:
        reply = split.standing(player_id, exact_ranks=EXACT_RANKS, buckets=DISTRIBUTION_BUCKETS) or []
        return player_parse(view, player_id, reply)
    return player_parse(view, player_id, _run(PLAYER_SCRIPT, player_call(view, player_id)))


def board_around(*, view: BoardView, player_id: str, r: int) -> list[Entry] | None:
    if view.frozen:
        return _frozen_around(view, player_id, r)
    split = _split(view)
    if split is not None:
        found = split.around(player_id, r)
        return None if found is None else tiered(view, _entries(_split_entries(split, found[1]), view), found[0])
    return around_parse(view, _run(AROUND_SCRIPT, around_call(view, player_id, r)))


def board_friends(*, view: BoardView, player_id: str) -> list[Entry]:
    """The player and their confirmed friends with a score on the board, ranked among themselves
    (`rank`, by the tie rule) and on the whole board (`board_rank`). One script."""
    if view.frozen:
        return _frozen_friends(view, player_id)
    split = _split(view)
    if split is not None:
        friends = sorted(str(f) for f in client().smembers(keys.friends_key(view.game.slug, player_id)))
        members = [player_id, *friends[:MAX_FRIENDS]]
        return friends_parse(view, _split_entries(split, split.friends(members)))
    return friends_parse(view, _run(FRIENDS_SCRIPT, friends_call(view, player_id)))


def board_distribution(*, view: BoardView) -> dict[str, Any]:
    """The equi-depth histogram used for percentiles and the chart (up to 100 buckets, bounds
    inclusive, ascending, disjoint: equal scores always share a bucket), at the board's current
    version."""
    if view.frozen:
        return _distribution_frozen(view)
    split = _split(view)

    def load(held: Cached | None) -> Cached:
        if split is not None:
            reply: list[Any] = [split.version()]
            if held is None or held.version != reply[0]:
                total, buckets = split.distribution(DISTRIBUTION_BUCKETS)
                reply.append(total)
                for bucket in buckets:
                    reply += list(bucket)
        else:
            reply = _run(DISTRIBUTION_SCRIPT, distribution_call(view, held.version if held else ""))
        version, value = distribution_parse(view, reply)
        if value is None and held is not None:
            return held
        return Cached(version=version, value=value or {"buckets": [], "total": 0})

    found: dict[str, Any] = distribution_cache.get(view.ref.key, load).value
    return found


def board_ranks(*, view: BoardView, members: list[tuple[str, int]]) -> list[int]:
    """Each (player, encoded score)'s rank on the whole live board as if the player were on it."""
    split = _split(view)
    if split is not None:
        return split.ranks(members)
    codec = view.codec
    above = counted_above(view.game.tie_rule)
    key = view.ref.key
    pipe = client().pipeline(transaction=False)
    for _, score in members:
        points = codec.points(score)
        if above is Above.DISTINCT_POINTS:
            pipe.zcount(view.ref.distinct_key, f"({points}", "+inf")
        elif above is Above.MORE_POINTS:
            pipe.zcount(key, codec.min_score_for_points(points + 1), "+inf")
        else:  # ahead in display order: a higher score, or the same and a smaller id
            pipe.zcount(key, f"({score}", "+inf")
            pipe.zrangebyscore(key, score, score)
    replies = pipe.execute()
    if above is not Above.AHEAD:
        return ranks_from(replies)
    return [rank_ahead(player, int(replies[2 * i]), replies[2 * i + 1]) for i, (player, _) in enumerate(members)]


# --------------------------------------------------------------------------- frozen seasons (PostgreSQL)
def _names(game: Game, player_ids: list[str]) -> dict[str, str | None]:
    return dict(
        Player.objects.filter(game_id=game.id, player_id__in=player_ids, display_name__isnull=False).values_list(
            "player_id", "display_name"
        )
    )


def _frozen_gone(view: BoardView) -> Gone:
    """The frozen board's rows of players hidden or deleted since the freeze (gone.py)."""
    return board_gone(view.standings(), rule=view.game.tie_rule, game_id=view.game.id)


def _frozen_entries(view: BoardView, rows: QuerySet[FrozenStanding], gone: Gone) -> list[Entry]:
    """The rows' entries, the gone players left out and out of every rank."""
    entries: list[Entry] = [
        entry(rank=gone.rank(rank=rank, position=position), player_id=player, display_name=None, score=score)
        for rank, position, player, score in rows.values_list("rank", "position", "player_id", "score")
        if player not in gone.ids
    ]
    names = _names(view.game, [e["player_id"] for e in entries])
    for e in entries:
        e["display_name"] = names.get(e["player_id"])
    tiered(view, entries, lambda: view.standings().count() - len(gone))
    return entries


def _frozen_top(view: BoardView, n: int) -> list[Entry]:
    gone = _frozen_gone(view)
    rows = view.standings().filter(position__lt=gone.raw(n)).order_by("position")
    return _frozen_entries(view, rows, gone)


def _frozen_standing(view: BoardView, player_id: str) -> Standing | None:
    row = view.standings().filter(player_id=player_id).values_list("rank", "position", "score").first()
    gone = _frozen_gone(view)
    if row is None or player_id in gone.ids:
        return None
    rank, position, score = row
    standings = view.standings()
    worse = standings.filter(score__gt=score) if view.game.ascending else standings.filter(score__lt=score)
    gone_worse = sum(1 for s in gone.scores if (s > score if view.game.ascending else s < score))
    name = _names(view.game, [player_id]).get(player_id)
    rank = gone.rank(rank=rank, position=position)
    return Standing(player_id, name, score, rank, standings.count() - len(gone), worse.count() - gone_worse)


def _frozen_around(view: BoardView, player_id: str, r: int) -> list[Entry] | None:
    position = view.standings().filter(player_id=player_id).values_list("position", flat=True).first()
    gone = _frozen_gone(view)
    if position is None or player_id in gone.ids:
        return None
    total = view.standings().count() - len(gone)
    width = 2 * r + 1
    start = max(0, min(gone.visible(position) - r, total - width))
    rows = view.standings().filter(position__gte=gone.raw(start), position__lt=gone.raw(start + width))
    return _frozen_entries(view, rows.order_by("position"), gone)


def _frozen_friends(view: BoardView, player_id: str) -> list[Entry]:
    members = [player_id, *friends_of(game=view.game, player_id=player_id)]
    gone = _frozen_gone(view)
    rows = view.standings().filter(player_id__in=members).order_by("position")
    found = [
        (p, s, gone.rank(rank=r, position=pos))
        for p, s, r, pos in rows.values_list("player_id", "score", "rank", "position")
        if p not in gone.ids
    ]
    ranks = ranks_for([s for _, s, _ in found], view.game.tie_rule)
    names = _names(view.game, [p for p, _, _ in found])
    entries = [
        friend_entry(rank=rank, board_rank=board_rank, player_id=p, display_name=names.get(p), score=s)
        for (p, s, board_rank), rank in zip(found, ranks, strict=True)
    ]
    return tiered(view, entries, lambda: view.standings().count() - len(gone), rank_key="board_rank")


def frozen_own_rank(*, view: BoardView, player_id: str) -> tuple[int, int] | None:
    """(score, rank) of a player in a frozen season's standings, counted as if they were visible:
    the other hidden and deleted players count in it no more than in anyone's public rank."""
    row = view.standings().filter(player_id=player_id).values_list("score", "rank", "position").first()
    if row is None:
        return None
    score, rank, position = row
    return int(score), _frozen_gone(view).rank(rank=int(rank), position=int(position))


def _bucket_bounds(lows: list[int], top: int) -> list[tuple[int, int]]:
    lows = sorted(set(lows))
    return [(low, (lows[i + 1] - 1) if i + 1 < len(lows) else top) for i, low in enumerate(lows)]


def _taken(drop: Counter[int], score: int) -> bool:
    """False once for each time `score` is in `drop` (that row is left out), then True."""
    drop[score] -= 1
    return False


def _distribution_frozen(view: BoardView) -> dict[str, Any]:
    scores = sorted(view.standings().values_list("score", flat=True))
    drop = Counter(_frozen_gone(view).scores)  # each gone row's score taken out once
    if drop:
        scores = [s for s in scores if not drop[s] or _taken(drop, s)]
    total = len(scores)
    if total == 0:
        return {"buckets": [], "total": 0}
    count = min(DISTRIBUTION_BUCKETS, total)
    bounds = _bucket_bounds([scores[i * total // count] for i in range(count)], scores[-1])
    buckets = [
        {"min_score": low, "max_score": high, "players": sum(1 for s in scores if low <= s <= high)}
        for low, high in bounds
    ]
    return {"buckets": buckets, "total": total}


# --------------------------------------------------------------------------- players, games (PostgreSQL)
def friends_of(*, game: Game, player_id: str) -> list[str]:
    """A player's confirmed friends (at most MAX_FRIENDS), sorted: from the friendships table."""
    pairs = Friendship.objects.filter(game_id=game.id).filter(Q(player_a=player_id) | Q(player_b=player_id))
    friends = [b if a == player_id else a for a, b in pairs.values_list("player_a", "player_b")[:MAX_FRIENDS]]
    return sorted(friends)


def hidden_players_sql(*, game_id: int) -> tuple[str, tuple[Any, ...]]:
    """SQL (and its parameters) selecting the ids of the game's hidden and deleted players, for
    queries that leave them out (they are on no public board)."""
    hidden = Player.objects.filter(game_id=game_id).filter(Q(hidden=True) | Q(deleted_at__isnull=False))
    return hidden.values("player_id").query.sql_with_params()


def player_hidden(*, game: Game, player_id: str) -> bool:
    return Player.objects.filter(game_id=game.id, player_id=player_id, hidden=True).exists()


def game_regions(*, season: Season | None) -> list[str]:
    """`global`, then every region a player of the season counts in: from the season's regions set
    in Redis (keys.regions_key), built from the regions table when it is missing."""
    if season is None:
        return [GLOBAL]
    found = {str(r) for r in client().smembers(keys.regions_key(season.game.slug, season.id))}
    return regions_listed(found or season_regions_load(season=season))


def regions_listed(members: Iterable[str]) -> list[str]:
    """A regions set as the answers list it: `global`, then the others in order."""
    return [GLOBAL, *sorted(str(r) for r in members if r != GLOBAL)]


REGIONS_TTL_S = 300  # the set is a copy: built anew at least this often (a region whose last player left goes)


def season_regions_load(*, season: Season) -> set[str]:
    """The season's regions set built from the regions table (`global` among them), for
    REGIONS_TTL_S. New regions are added as they are fixed (services.season_regions_fix)."""
    regions = set(SeasonRegion.objects.filter(season_id=season.id).values_list("region", flat=True).distinct())
    regions.add(GLOBAL)
    key = keys.regions_key(season.game.slug, season.id)
    pipe = client().pipeline(transaction=True)
    pipe.delete(key)
    pipe.sadd(key, *regions)
    pipe.expire(key, REGIONS_TTL_S)
    pipe.execute()
    return regions


def season_regions_of(*, season: Season, player_ids: Iterable[str]) -> dict[str, str]:
    """The region each of these players counts in for the season (those who have one)."""
    rows = rows_by_keys(
        SeasonRegion._meta.db_table,
        ["player_id", "region"],
        equal={"season_id": season.id},
        key="player_id",
        key_type="text",
        keys=player_ids,
    )
    return {str(pid): str(region) for pid, region in rows}


@dataclass(frozen=True)
class GameDetail:
    game: Game
    boards: list[str]
    regions: list[str]
    current: Season | None

    @property
    def current_id(self) -> int | None:
        return self.current.id if self.current is not None else None


def game_detail(*, slug: str, now: datetime) -> GameDetail | None:
    """A game's name, tie rule, boards, the regions of its current season and that season."""
    catalog = catalog_get(slug=slug)
    if catalog.game is None:
        return None
    return game_detail_of(catalog=catalog, now=now, regions=game_regions(season=catalog_current(catalog, now)))


def catalog_current(catalog: Catalog, now: datetime) -> Season | None:
    """The game's current season at `now`, by its catalog."""
    assert catalog.game is not None
    return season_current(game=catalog.game, now=now, seasons=catalog.seasons, pointer_id=catalog.pointer_id)


def game_detail_of(*, catalog: Catalog, now: datetime, regions: list[str]) -> GameDetail:
    """`game_detail` from a catalog and the current season's regions (the fast entrance reads both
    in one Redis call)."""
    assert catalog.game is not None
    return GameDetail(
        game=catalog.game, boards=list(BOARD_NAMES), regions=regions, current=catalog_current(catalog, now)
    )


@dataclass(frozen=True)
class SeasonRow:
    id: int
    name: str
    starts_at: datetime
    ends_at: datetime
    grace_s: int
    status: str


@dataclass(frozen=True)
class SeasonListing:
    current_id: int | None
    seasons: list[SeasonRow] = field(default_factory=list)


def game_seasons(*, slug: str, now: datetime) -> SeasonListing | None:
    """A game's seasons, newest first, each with its status at `now`, and the current one: from
    the same catalog as the board reads, so the two never disagree about the current season."""
    catalog = catalog_get(slug=slug)
    if catalog.game is None:
        return None
    return game_seasons_of(catalog=catalog, now=now)


def game_seasons_of(*, catalog: Catalog, now: datetime) -> SeasonListing:
    """`game_seasons` from a catalog."""
    current = catalog_current(catalog, now)
    rows = [SeasonRow(s.id, s.name, s.starts_at, s.ends_at, s.grace_s, str(s.status_at(now))) for s in catalog.seasons]
    return SeasonListing(current_id=current.id if current is not None else None, seasons=rows)
