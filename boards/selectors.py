"""The read path: top, a player's standing and the players around them, from Redis.

Each read resolves the season once and runs one Lua script, so an answer never mixes two
moments. Ranks follow the game's tie rule and are computed from counts (boards/lua/).
"""

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cachetools import TTLCache
from django.conf import settings
from django.core.cache import cache
from django.db.models import Q, QuerySet

from common.redis import client, lua_path, lua_script
from seasons.models import Game, Season
from seasons.periods import BadPeriod
from seasons.selectors import game_catalog, game_get, season_current, seasons_of

from . import keys
from .codec import ScoreCodec
from .keys import GLOBAL, BoardRef
from .kinds import BOARD_NAMES, KINDS, NO_PERIOD
from .models import Friendship, FrozenStanding, Player, SeasonRegion
from .ranking import ranks_for

REGION_RE = re.compile(r"^[a-z0-9-]{2,40}$")  # a region, or an extra dimension's board: country-de
MAX_FRIENDS = 500

_TOP = lua_path(__file__, "ranking_lib.lua", "top.lua")
_AROUND = lua_path(__file__, "ranking_lib.lua", "around.lua")
_PLAYER = lua_path(__file__, "ranking_lib.lua", "player.lua")


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

    @property
    def ref(self) -> BoardRef:
        return BoardRef(self.game.slug, self.season.id, self.board, self.region, self.period or NO_PERIOD)

    @property
    def frozen(self) -> bool:
        """Frozen and archived seasons answer from their final standings in PostgreSQL."""
        return self.season.frozen_at is not None

    def standings(self) -> QuerySet[FrozenStanding]:
        return FrozenStanding.objects.filter(
            season=self.season, board=self.board, region=self.region, period=self.period or NO_PERIOD
        )

    @property
    def codec(self) -> ScoreCodec:
        return ScoreCodec(self.season.time_bits)

    def shown(self, stored_points: int) -> int:
        """The value a reader sees (lower-is-better boards store capacity minus the value)."""
        return self.codec.shown_points(stored_points, ascending=self.game.ascending)

    def keys(self) -> list[str]:
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
    seasons: list[Season] | None = None,
    pointer_id: int | None = -1,
) -> BoardView:
    """Which season, period and region a reader means. The season is resolved once per request,
    so one answer never mixes two seasons."""
    kind = KINDS.get(board)
    if kind is None:
        raise UnknownBoard(board)
    region = region or GLOBAL
    if region != GLOBAL and not REGION_RE.match(region):
        raise BadQuery("region", "A region is 'global' or 2-40 characters from [a-z0-9-].")
    if seasons is None:
        seasons = seasons_of(game=game)
    if season:
        if not season.isdigit():
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
    """`board_resolve` for a game named by its slug, through the read path's catalog cache."""
    catalog = game_catalog(slug=slug)
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
    game = game_get(slug=slug)
    if game is None:
        return None
    current = season_current(game=game, now=now)
    return GameDetail(game=game, boards=list(BOARD_NAMES), regions=game_regions(season=current), current=current)


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
    seasons: list[SeasonRow]


def game_seasons(*, slug: str, now: datetime) -> SeasonListing | None:
    """A game's seasons, newest first, each with its status at `now`, and the current one."""
    game = game_get(slug=slug)
    if game is None:
        return None
    seasons = seasons_of(game=game)
    current = season_current(game=game, now=now, seasons=seasons)
    rows = [SeasonRow(s.id, s.name, s.starts_at, s.ends_at, s.grace_s, str(s.status_at(now))) for s in seasons]
    return SeasonListing(current_id=current.id if current is not None else None, seasons=rows)


def _entries(flat: list[Any], view: "BoardView") -> list[dict[str, Any]]:
    entries = []
    for i in range(0, len(flat), 4):
        entries.append(
            {
                "rank": int(flat[i + 2]),
                "player_id": flat[i],
                "display_name": flat[i + 3],
                "score": view.shown(int(flat[i + 1])),
            }
        )
    return entries


def _fill_names(game: Game, entries: list[dict[str, Any]]) -> None:
    """Names missing from the Redis index (e.g. after a flush) come from the players table."""
    missing = [e["player_id"] for e in entries if e["display_name"] is None]
    if not missing:
        return
    names = {
        pid: name or ""
        for pid, name in Player.objects.filter(
            game=game, player_id__in=missing, display_name__isnull=False
        ).values_list("player_id", "display_name")
    }
    if names:
        client().hset(keys.names_key(game.slug), mapping=dict[Any, Any](names))
    for e in entries:
        if e["display_name"] is None:
            e["display_name"] = names.get(e["player_id"])


class _Flight:
    """One load in progress; later readers of the same key wait for its answer."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: list[dict[str, Any]] | None = None
        self.error: BaseException | None = None
        self.waiters = 0


class _TopCache:
    """Top-N answers kept for BOARD_TOP_CACHE_S with single-flight: however many readers ask at
    once, one of them reads Redis per key; the others wait for its answer. Bounded: at most
    `maxsize` answers (least recently used go first), and a flight lives only while it loads."""

    def __init__(self, maxsize: int = 1024) -> None:
        self._lock = threading.Lock()
        self._maxsize = maxsize
        self._entries: TTLCache[tuple[str, int, str], list[dict[str, Any]]] = self._new()
        self._inflight: dict[tuple[str, int, str], _Flight] = {}

    def _new(self) -> TTLCache[tuple[str, int, str], list[dict[str, Any]]]:
        return TTLCache(maxsize=self._maxsize, ttl=float(settings.BOARD_TOP_CACHE_S))

    def get(self, key: tuple[str, int, str], load: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                return hit
            flight = self._inflight.get(key)
            leader = flight is None
            if flight is None:
                flight = self._inflight[key] = _Flight()
            else:
                flight.waiters += 1
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            assert flight.value is not None
            return flight.value
        try:
            flight.value = load()
            with self._lock:
                self._entries[key] = flight.value
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
            self._entries = self._new()


top_cache = _TopCache()


def _frozen_entries(view: BoardView, rows: QuerySet[FrozenStanding]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = [
        {"rank": rank, "player_id": player, "display_name": None, "score": score}
        for rank, player, score in rows.values_list("rank", "player_id", "score")
    ]
    missing = [e["player_id"] for e in entries]
    names = dict(
        Player.objects.filter(game=view.game, player_id__in=missing, display_name__isnull=False).values_list(
            "player_id", "display_name"
        )
    )
    for e in entries:
        e["display_name"] = names.get(e["player_id"])
    return entries


def board_top(*, view: BoardView, n: int, cached: bool = True) -> list[dict[str, Any]]:
    """The top n; cached for BOARD_TOP_CACHE_S unless `cached` is False (the live publisher)."""
    if view.frozen:
        return _frozen_entries(view, view.standings().order_by("position")[:n])

    def load() -> list[dict[str, Any]]:
        flat = lua_script(_TOP)(keys=view.keys(), args=[n, view.codec.time_span, view.game.tie_rule], client=client())
        entries = _entries(flat[1:], view)
        _fill_names(view.game, entries)
        return entries

    if not cached:
        return load()
    # One GET per read: a correction (a hidden, deleted or revoked player) must show at once in
    # every web process, not when the cached answer expires.
    generation = str(client().get(keys.generation_key(view.game.slug)) or "0")
    return top_cache.get((view.ref.key, n, generation), load)


@dataclass(frozen=True)
class Standing:
    player_id: str
    display_name: str | None
    score: int
    rank: int
    total: int
    lower: int
    approximate: tuple[float, float] | None = None

    @property
    def percentile(self) -> float:
        """Share of ranked players with a strictly lower (worse) score, in percent, floored to 0.1:
        exact for the top 10,000, otherwise read from the score histogram (API.md)."""
        if self.approximate is not None:
            return self.approximate[0]
        if self.total == 0:
            return 0.0
        return (self.lower * 1000 // self.total) / 10

    @property
    def percentile_error(self) -> float:
        """The bound in percentage points: 0 when exact, else the player's histogram bucket's share."""
        return self.approximate[1] if self.approximate is not None else 0.0


def _display_name(game: Game, player_id: str) -> str | None:
    return Player.objects.filter(game=game, player_id=player_id).values_list("display_name", flat=True).first()


def board_player(*, view: BoardView, player_id: str) -> Standing | None:
    if view.frozen:
        row = view.standings().filter(player_id=player_id).values_list("rank", "score").first()
        if row is None:
            return None
        rank, score = row
        standings = view.standings()
        worse = standings.filter(score__gt=score) if view.game.ascending else standings.filter(score__lt=score)
        return Standing(player_id, _display_name(view.game, player_id), score, rank, standings.count(), worse.count())
    reply = lua_script(_PLAYER)(
        keys=view.keys(), args=[player_id, view.codec.time_span, view.game.tie_rule], client=client()
    )
    if not reply:
        return None
    points, rank, total, lower, name = reply
    if name is None:
        name = _display_name(view.game, player_id)
    approximate = percentile_from_histogram(view, int(points)) if int(rank) > EXACT_RANKS else None
    return Standing(player_id, name, view.shown(int(points)), int(rank), int(total), int(lower), approximate)


def board_around(*, view: BoardView, player_id: str, r: int) -> list[dict[str, Any]] | None:
    if view.frozen:
        position = view.standings().filter(player_id=player_id).values_list("position", flat=True).first()
        if position is None:
            return None
        total = view.standings().count()
        width = 2 * r + 1
        start = max(0, min(position - r, total - width))
        rows = view.standings().filter(position__gte=start, position__lt=start + width).order_by("position")
        return _frozen_entries(view, rows)
    flat = lua_script(_AROUND)(
        keys=view.keys(), args=[player_id, r, view.codec.time_span, view.game.tie_rule], client=client()
    )
    if not flat:
        return None
    entries = _entries(flat[1:], view)
    _fill_names(view.game, entries)
    return entries


def board_ranks(*, view: BoardView, members: list[tuple[str, int]]) -> list[int]:
    """Each (player, encoded score)'s rank on the whole live board as if the player were on it."""
    codec = view.codec
    rule = view.game.tie_rule
    key = view.ref.key
    pipe = client().pipeline(transaction=False)
    for _, score in members:
        points = codec.points(score)
        if rule == "dense":
            pipe.zcount(view.ref.distinct_key, f"({points}", "+inf")
        elif rule == "competition":
            pipe.zcount(key, codec.min_score_for_points(points + 1), "+inf")
        else:
            pipe.zcount(key, f"({score}", "+inf")
            pipe.zrangebyscore(key, score, score)
    replies = pipe.execute()
    ranks = []
    if rule == "first":
        for i, (player, _) in enumerate(members):
            above, equal = replies[2 * i], replies[2 * i + 1]
            ranks.append(1 + int(above) + sum(1 for other in equal if other < player))
    else:
        ranks = [1 + int(count) for count in replies]
    return ranks


def friends_of(*, game: Game, player_id: str) -> list[str]:
    """A player's confirmed friends (at most MAX_FRIENDS), sorted."""
    pairs = Friendship.objects.filter(game=game).filter(Q(player_a=player_id) | Q(player_b=player_id))
    friends = [b if a == player_id else a for a, b in pairs.values_list("player_a", "player_b")[:MAX_FRIENDS]]
    return sorted(friends)


def board_friends(*, view: BoardView, player_id: str) -> list[dict[str, Any]]:
    """The player and their confirmed friends with a score on the board, ranked among themselves
    (`rank`, by the tie rule) and on the whole board (`board_rank`). One ZMSCORE."""
    members = [player_id, *friends_of(game=view.game, player_id=player_id)]
    entries: list[dict[str, Any]]
    if view.frozen:
        rows = view.standings().filter(player_id__in=members).order_by("position")
        found = [(p, s, r) for p, s, r in rows.values_list("player_id", "score", "rank")]
        ranks = ranks_for([s for _, s, _ in found], view.game.tie_rule)
        entries = [
            {"rank": rank, "board_rank": board_rank, "player_id": p, "display_name": None, "score": s}
            for (p, s, board_rank), rank in zip(found, ranks, strict=True)
        ]
    else:
        scores = client().zmscore(view.ref.key, members)
        present = sorted(
            ((m, int(s)) for m, s in zip(members, scores, strict=True) if s is not None), key=lambda x: (-x[1], x[0])
        )
        codec = view.codec
        points = [codec.points(s) for _, s in present]
        ranks = ranks_for(points, view.game.tie_rule)
        on_board = board_ranks(view=view, members=present)
        entries = [
            {"rank": rank, "board_rank": board_rank, "player_id": m, "display_name": None, "score": view.shown(p)}
            for (m, _), p, rank, board_rank in zip(present, points, ranks, on_board, strict=True)
        ]
    _fill_names(view.game, entries)
    return entries


def frozen_own_rank(*, view: BoardView, player_id: str) -> tuple[int, int] | None:
    """(score, rank) of a player in a frozen season's standings (hidden players are in them)."""
    row = view.standings().filter(player_id=player_id).values_list("score", "rank").first()
    return (int(row[0]), int(row[1])) if row else None


def hidden_players_sql(*, game_id: int) -> tuple[str, tuple[Any, ...]]:
    """SQL (and its parameters) selecting the ids of the game's hidden and deleted players, for
    queries that leave them out (they are on no public board)."""
    hidden = Player.objects.filter(game_id=game_id).filter(Q(hidden=True) | Q(deleted_at__isnull=False))
    return hidden.values("player_id").query.sql_with_params()


def player_hidden(*, game: Game, player_id: str) -> bool:
    return Player.objects.filter(game=game, player_id=player_id, hidden=True).exists()


def game_regions(*, season: Season | None) -> list[str]:
    """`global`, then every region a player of the season counts in."""
    regions = [GLOBAL]
    if season is not None:
        regions += sorted(SeasonRegion.objects.filter(season=season).values_list("region", flat=True).distinct())
    return regions


DISTRIBUTION_BUCKETS = 100
HISTOGRAM_MAX_AGE_S = 60
EXACT_RANKS = 10_000


def board_distribution(*, view: BoardView) -> dict[str, Any]:
    """The equi-depth histogram used for percentiles and the chart (up to 100 buckets, bounds
    inclusive, ascending, disjoint: equal scores always share a bucket). Kept in Redis for at most
    a minute (and refreshed by beat for boards that changed), so recomputed at least once a minute."""
    if view.frozen:
        return _distribution_frozen(view)
    buckets, total = histogram(view)
    shown = [{"min_score": lo, "max_score": hi, "players": n} for lo, hi, n in buckets]
    if view.game.ascending:  # stored inverted: turn the buckets back into values, ascending
        shown = [
            {"min_score": view.shown(b["max_score"]), "max_score": view.shown(b["min_score"]), "players": b["players"]}
            for b in reversed(shown)
        ]
    return {"buckets": shown, "total": total}


def _bucket_bounds(lows: list[int], top: int) -> list[tuple[int, int]]:
    lows = sorted(set(lows))
    return [(low, (lows[i + 1] - 1) if i + 1 < len(lows) else top) for i, low in enumerate(lows)]


Histogram = tuple[list[tuple[int, int, int]], int]


def histogram(view: BoardView, *, refresh: bool = False) -> Histogram:
    """(buckets of stored points (low, high, players), total), from Django's cache when it was
    computed less than a minute ago for the board's current correction generation."""
    generation = str(client().get(keys.generation_key(view.game.slug)) or "0")
    key = keys.histogram_cache_key(view.ref.key, generation)
    if not refresh:
        cached: Histogram | None = cache.get(key)
        if cached is not None:
            return cached
    found = _histogram_compute(view)
    cache.set(key, found, timeout=HISTOGRAM_MAX_AGE_S)
    return found


def _histogram_compute(view: BoardView) -> tuple[list[tuple[int, int, int]], int]:
    redis = client()
    key, codec = view.ref.key, view.codec
    total = int(redis.zcard(key))
    if total == 0:
        return [], 0
    count = min(DISTRIBUTION_BUCKETS, total)
    pipe = redis.pipeline(transaction=False)
    for i in range(count):
        position = i * total // count
        pipe.zrange(key, position, position, withscores=True)
    pipe.zrange(key, -1, -1, withscores=True)
    replies = pipe.execute()
    lows = [codec.points(reply[0][1]) for reply in replies[:-1] if reply]
    top = codec.points(replies[-1][0][1]) if replies[-1] else max(lows)
    bounds = _bucket_bounds(lows, top)
    pipe = redis.pipeline(transaction=False)
    for low, high in bounds:
        pipe.zcount(key, codec.min_score_for_points(low), codec.min_score_for_points(high + 1) - 1)
    counts = pipe.execute()
    return [(low, high, int(n)) for (low, high), n in zip(bounds, counts, strict=True)], total


def percentile_from_histogram(view: BoardView, stored_points: int) -> tuple[float, float]:
    """(percentile, error bound in percentage points) read from the histogram: players in buckets
    wholly below, and the share of the player's own bucket as the bound."""
    buckets, total = histogram(view)
    if total == 0:
        return 0.0, 0.0
    below = sum(n for _, high, n in buckets if high < stored_points)
    own = next((n for low, high, n in buckets if low <= stored_points <= high), 0)
    return (below * 1000 // total) / 10, -(-own * 1000 // total) / 10


def _distribution_frozen(view: BoardView) -> dict[str, Any]:
    scores = sorted(view.standings().values_list("score", flat=True))
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


def season_regions_of(*, season: Season, player_ids: Iterable[str]) -> dict[str, str]:
    """The region each of these players counts in for the season (those who have one)."""
    return dict(
        SeasonRegion.objects.filter(season=season, player_id__in=list(player_ids)).values_list("player_id", "region")
    )
