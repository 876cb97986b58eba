"""The read path: top, a player's standing and the players around them, from Redis.

Each read resolves the season once and runs one Lua script, so an answer never mixes two
moments. Ranks follow the game's tie rule and are computed from counts (boards/lua/).
"""

import json
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings

from scoring import redis_boards
from scoring.encoding import ScoreCodec
from seasons.models import FrozenStanding, Game, Season
from seasons.periods import BadPeriod, day_label, month_label, parse_day, parse_month, parse_week, week_label
from seasons.selectors import season_current, seasons_of

from .models import Player
from .ranking import ranks_for

REGION_RE = re.compile(r"^[a-z0-9-]{2,40}$")  # a region, or an extra dimension's board: country-de
BOARDS = ("all", "daily", "weekly", "monthly", "best")

_TOP = redis_boards.lua_path(__file__, "ranking_lib.lua", "top.lua")
_AROUND = redis_boards.lua_path(__file__, "ranking_lib.lua", "around.lua")
_PLAYER = redis_boards.lua_path(__file__, "ranking_lib.lua", "player.lua")


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
    def ref(self) -> redis_boards.BoardRef:
        return redis_boards.BoardRef(
            self.game.slug, self.season.id, self.board, self.region, self.period or redis_boards.NO_PERIOD
        )

    @property
    def frozen(self) -> bool:
        """Frozen and archived seasons answer from their final standings in PostgreSQL."""
        return self.season.frozen_at is not None

    def standings(self):
        return FrozenStanding.objects.filter(
            season=self.season, board=self.board, region=self.region, period=self.period or redis_boards.NO_PERIOD
        )

    @property
    def codec(self) -> ScoreCodec:
        return ScoreCodec(self.season.time_bits)

    def shown(self, stored_points: int) -> int:
        """The value a reader sees (lower-is-better boards store capacity minus the value)."""
        return self.codec.shown_points(stored_points, ascending=self.game.ascending)

    def keys(self) -> list[str]:
        ref = self.ref
        return [ref.key, ref.distinct_key, redis_boards.names_key(self.game.slug)]


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
    if board not in BOARDS:
        raise UnknownBoard(board)
    region = region or redis_boards.GLOBAL
    if region != redis_boards.GLOBAL and not REGION_RE.match(region):
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
        if board == "daily":
            label = period or day_label(now)
            parse_day(label)
        elif board == "weekly":
            label = period or week_label(now)
            parse_week(label)
        elif board == "monthly":
            label = period or month_label(now)
            parse_month(label)
        elif period:
            raise BadQuery("period", f"The {board} board has no period.")
    except BadPeriod as exc:
        raise BadQuery("period", str(exc)) from exc
    return BoardView(game=game, season=chosen, board=board, region=region, period=label)


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
    """Names missing from the Redis index (e.g. after a flush) come from the ledger's players."""
    missing = [e["player_id"] for e in entries if e["display_name"] is None]
    if not missing:
        return
    names = {
        pid: name or ""
        for pid, name in Player.objects.filter(
            game=game, player_id__in=missing, display_name__isnull=False
        ).values_list("player_id", "display_name")
    }
    redis_boards.names_store(game.slug, names)
    for e in entries:
        if e["display_name"] is None:
            e["display_name"] = names.get(e["player_id"])


class _TopCache:
    """Top-N answers kept for BOARD_TOP_CACHE_S with single-flight: however many readers ask at
    once, one of them reads Redis per board and n per period; the others wait for its answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, int, str, str], tuple[float, list[dict[str, Any]]]] = {}
        self._inflight: dict[tuple[str, int, str, str], threading.Lock] = {}

    def get(self, key: tuple[str, int, str, str], load) -> list[dict[str, Any]]:
        ttl = float(settings.BOARD_TOP_CACHE_S)
        now = time.monotonic()
        hit = self._entries.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        with self._lock:
            flight = self._inflight.setdefault(key, threading.Lock())
        with flight:
            hit = self._entries.get(key)
            if hit is not None and hit[0] > time.monotonic():
                return hit[1]
            value = load()
            self._entries[key] = (time.monotonic() + ttl, value)
            if len(self._entries) > 10_000:
                cutoff = time.monotonic()
                for stale in [k for k, (exp, _) in self._entries.items() if exp <= cutoff]:
                    self._entries.pop(stale, None)
            return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


top_cache = _TopCache()


def _frozen_entries(view: BoardView, rows) -> list[dict[str, Any]]:
    entries = [
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
        script = redis_boards.lua_script(_TOP)
        flat = script(
            keys=view.keys(), args=[n, view.codec.time_span, view.game.tie_rule], client=redis_boards.client()
        )
        entries = _entries(flat[1:], view)
        _fill_names(view.game, entries)
        return entries

    if not cached:
        return load()
    # One GET per read: a correction (a hidden, deleted or revoked player) must show at once in
    # every web process, not when the cached answer expires.
    generation = str(redis_boards.client().get(redis_boards.generation_key(view.game.slug)) or "0")
    return top_cache.get((view.ref.key, n, view.game.tie_rule, generation), load)


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


def board_player(*, view: BoardView, player_id: str) -> Standing | None:
    if view.frozen:
        row = view.standings().filter(player_id=player_id).values_list("rank", "score").first()
        if row is None:
            return None
        rank, score = row
        standings = view.standings()
        name = Player.objects.filter(game=view.game, player_id=player_id).values_list("display_name", flat=True).first()
        worse = standings.filter(score__gt=score) if view.game.ascending else standings.filter(score__lt=score)
        return Standing(player_id, name, score, rank, standings.count(), worse.count())
    script = redis_boards.lua_script(_PLAYER)
    reply = script(
        keys=view.keys(), args=[player_id, view.codec.time_span, view.game.tie_rule], client=redis_boards.client()
    )
    if not reply:
        return None
    points, rank, total, lower, name = reply
    if name is None:
        name = Player.objects.filter(game=view.game, player_id=player_id).values_list("display_name", flat=True).first()
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
    script = redis_boards.lua_script(_AROUND)
    flat = script(
        keys=view.keys(), args=[player_id, r, view.codec.time_span, view.game.tie_rule], client=redis_boards.client()
    )
    if not flat:
        return None
    entries = _entries(flat[1:], view)
    _fill_names(view.game, entries)
    return entries


def _board_ranks(view: BoardView, members: list[tuple[str, int]]) -> list[int]:
    """Each (player, encoded score)'s rank on the whole board as if the player were on it."""
    client = redis_boards.client()
    codec = view.codec
    rule = view.game.tie_rule
    key = view.ref.key
    pipe = client.pipeline(transaction=False)
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


def board_friends(*, view: BoardView, player_id: str, friends: list[str]) -> list[dict[str, Any]]:
    """The player and their confirmed friends with a score on the board, ranked among themselves
    (`rank`, by the tie rule) and on the whole board (`board_rank`). One ZMSCORE."""
    members = [player_id, *friends]
    if view.frozen:
        rows = view.standings().filter(player_id__in=members).order_by("position")
        found = [(p, s, r) for p, s, r in rows.values_list("player_id", "score", "rank")]
        ranks = ranks_for([s for _, s, _ in found], view.game.tie_rule)
        entries = [
            {"rank": rank, "board_rank": board_rank, "player_id": p, "display_name": None, "score": s}
            for (p, s, board_rank), rank in zip(found, ranks, strict=True)
        ]
    else:
        scores = redis_boards.client().zmscore(view.ref.key, members)
        present = sorted(
            ((m, int(s)) for m, s in zip(members, scores, strict=True) if s is not None), key=lambda x: (-x[1], x[0])
        )
        codec = view.codec
        points = [codec.points(s) for _, s in present]
        ranks = ranks_for(points, view.game.tie_rule)
        board_ranks = _board_ranks(view, present)
        entries = [
            {"rank": rank, "board_rank": board_rank, "player_id": m, "display_name": None, "score": view.shown(p)}
            for (m, _), p, rank, board_rank in zip(present, points, ranks, board_ranks, strict=True)
        ]
    _fill_names(view.game, entries)
    return entries


def board_own_rank(*, view: BoardView, player_id: str) -> tuple[int, int] | None:
    """(score, rank) of a player, hidden or not, counted as if visible: what their profile shows."""
    from scoring.selectors import ledger_boards

    if view.frozen:
        row = view.standings().filter(player_id=player_id).values_list("score", "rank").first()
        return (int(row[0]), int(row[1])) if row else None
    board = ledger_boards(game=view.game, player_ids=[player_id], season_id=view.season.id, include_hidden=True).get(
        view.ref.key
    )
    if board is None or player_id not in board.scores:
        return None
    score = board.scores[player_id]
    [rank] = _board_ranks(view, [(player_id, score)])
    return view.shown(view.codec.points(score)), rank


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


def histogram(view: BoardView, *, refresh: bool = False) -> tuple[list[tuple[int, int, int]], int]:
    """(buckets of stored points (low, high, players), total), from Redis when fresh enough."""
    client = redis_boards.client()
    key = redis_boards.histogram_key(view.ref.key)
    generation = str(client.get(redis_boards.generation_key(view.game.slug)) or "0")
    if not refresh:
        cached = client.get(key)
        if cached:
            data = json.loads(cached)
            if data["generation"] == generation:
                return [(int(b[0]), int(b[1]), int(b[2])) for b in data["buckets"]], int(data["total"])
    buckets, total = _histogram_compute(view)
    client.set(key, json.dumps({"generation": generation, "buckets": buckets, "total": total}), ex=HISTOGRAM_MAX_AGE_S)
    return buckets, total


def _histogram_compute(view: BoardView) -> tuple[list[tuple[int, int, int]], int]:
    client = redis_boards.client()
    key, codec = view.ref.key, view.codec
    total = int(client.zcard(key))
    if total == 0:
        return [], 0
    count = min(DISTRIBUTION_BUCKETS, total)
    pipe = client.pipeline(transaction=False)
    for i in range(count):
        position = i * total // count
        pipe.zrange(key, position, position, withscores=True)
    pipe.zrange(key, -1, -1, withscores=True)
    replies = pipe.execute()
    lows = [codec.points(reply[0][1]) for reply in replies[:-1] if reply]
    top = codec.points(replies[-1][0][1]) if replies[-1] else max(lows)
    bounds = _bucket_bounds(lows, top)
    pipe = client.pipeline(transaction=False)
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
