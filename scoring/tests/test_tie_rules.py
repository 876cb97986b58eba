"""The tie rules agree in the three languages they are written in, entry by entry: Python
(boards/ranking.py), Lua (boards/lua/ranking_lib.lua, through the live read scripts: top, player,
around, friends, and the rank of a score, on a board of one sorted set and on one split into 3
shards) and SQL (the freeze's window functions, boards/standings.py), for each rule, on a board
with many ties: equal points reached at different times, equal points reached in the same second
(ordered by player id, by code point), a later 0-point result that does not move a reach time, and
a tie group at zero. Each is also held to the rules' definitions (docs/api.md), counted here
by brute force. (In scoring's tests: the freeze reads the ledger.)"""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from boards import keys
from boards.kinds import NO_PERIOD
from boards.models import FrozenStanding
from boards.ranking import ranks_for
from boards.selectors import board_around, board_friends, board_player, board_ranks, board_top, board_view
from boards.services import friendship_add
from common.redis import client as redis_client
from scoring.freezing import season_freeze
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from seasons.models import Game, Season

pytestmark = pytest.mark.django_db

# Matches: (seconds after the first accept, [(player, points)]), each accepted at that second.
MATCHES: list[tuple[int, list[tuple[str, int]]]] = [
    # 100 points reached at eight different times, in reverse id order: time decides, not the id.
    *[(1 + i, [(f"t100-{c}", 100)]) for i, c in enumerate("hgfedcba")],
    (3, [("solo-69", 69)]),
    (5, [("two-2", 30)]),
    (10, [("two-1", 40)]),
    (12, [("solo-55", 55)]),
    (15, [("two-3", 70)]),
    # 70 points, all in one second: by player id (code point: digits, upper case, then lower case).
    (20, [(p, 70) for p in ["A", "Z", "a-1", "b.2", "c_3", "0", "9z", "m-70"]] + [("two-1", 30)]),
    (25, [("two-2", 40)]),  # reaches 70 later than the rest
    (30, [("two-3", 0)]),  # a later 0-point result: two-3 still reached 70 at second 15
    (35, [("k9", 40)]),
    (40, [(f"k{i}", 40) for i in range(1, 6)]),
    (45, [("k6", 40)]),
    (50, [("k0", 40)]),
    (55, [("z-0", 0)]),
    (60, [("z-a", 0), ("z-b", 0), ("Zed", 0)]),
]
HUB = "A"  # friends with every other player: their friends board is the whole board
FRIENDS = ("k3", ["k0", "k9", "two-1", "Z", "t100-a"])  # a smaller circle (and the hub), across tie groups
RULES = ["competition", "dense", "first"]

Entry = tuple[str, int, int]  # (player, points, rank)


def display_order() -> list[tuple[str, int]]:
    """(player, points) in display order by the rules' definition: points descending, then the
    second the points were reached (the latest positive result; the earliest while all are zero),
    then player id by code point."""
    results: dict[str, list[tuple[int, int]]] = {}
    for second, players in MATCHES:
        for player, points in players:
            results.setdefault(player, []).append((second, points))
    standing = []
    for player, rs in results.items():
        total = sum(p for _, p in rs)
        positive = [s for s, p in rs if p > 0]
        reached = max(positive) if positive else min(s for s, _ in rs)
        standing.append((-total, reached, player))
    return [(player, -minus) for minus, _, player in sorted(standing)]


def by_definition(rule: str, order: list[tuple[str, int]]) -> list[int]:
    """Each entry's rank counted from the words of docs/api.md, entry by entry (no ranking.py)."""
    if rule == "competition":
        return [1 + sum(1 for _, q in order if q > p) for _, p in order]
    if rule == "dense":
        return [1 + len({q for _, q in order if q > p}) for _, p in order]
    return list(range(1, len(order) + 1))


def feed(games: list[Game]) -> None:
    first_accept = (timezone.now() - timedelta(hours=2)).replace(microsecond=0)
    server_keys = {g.slug: make_key(g) for g in games}
    for second, players in MATCHES:
        accepted = first_accept + timedelta(seconds=second)
        results = [{"player_id": p, "points": points} for p, points in players]
        body = match_body(results, accepted - timedelta(minutes=5))
        match_id = uuid.uuid4()
        for g in games:
            submit_direct(g, server_keys[g.slug], body, now=accepted, match_id=match_id)
    drain()
    everyone = {p for _, players in MATCHES for p, _ in players}
    for g in games:
        for friend in sorted(everyone - {HUB}):
            friendship_add(game=g, player_id=HUB, friend_id=friend)
        for friend in FRIENDS[1]:
            friendship_add(game=g, player_id=FRIENDS[0], friend_id=friend)


def window(expected: list[Entry], player: str, r: int) -> list[Entry]:
    """The 2r+1 entries around `player`, sliding at either end (docs/api.md)."""
    at = [e[0] for e in expected].index(player)
    width = 2 * r + 1
    start = max(0, min(at - r, len(expected) - width))
    return expected[start : start + width]


def triples(entries: list[dict]) -> list[Entry]:
    return [(e["player_id"], e["score"], e["rank"]) for e in entries]


def live_reads_agree(game: Game, expected: list[Entry]) -> None:
    """The Lua library's ranks, through every live read of the game's `all` board, are `expected`."""
    view = board_view(slug=game.slug, board="all", region=None, season=None, period=None, now=timezone.now())
    assert triples(board_top(view=view, n=1000, cached=False)) == expected, "top"
    assert triples(board_top(view=view, n=11, cached=False)) == expected[:11], "top, cut inside a tie"
    for player, points, rank in expected:
        standing = board_player(view=view, player_id=player)
        assert standing is not None
        assert (standing.score, standing.rank, standing.total) == (points, rank, len(expected)), ("player", player)
        for r in (0, 2, 5):
            around = board_around(view=view, player_id=player, r=r)
            assert around is not None
            assert triples(around) == window(expected, player, r), ("around", player, r)
    hub = board_friends(view=view, player_id=HUB)
    assert [(e["player_id"], e["score"], e["board_rank"]) for e in hub] == expected, "friends: board ranks"
    assert triples(hub) == expected, "friends: ranked among themselves, everyone being among them"
    circle = {FRIENDS[0], HUB, *FRIENDS[1]}  # the hub is everyone's friend
    mine = [e for e in expected if e[0] in circle]
    found = board_friends(view=view, player_id=FRIENDS[0])
    assert [(e["player_id"], e["score"], e["board_rank"]) for e in found] == mine, "friends: a circle"
    assert [e["rank"] for e in found] == ranks_for([e[1] for e in mine], game.tie_rule)


def scores_of(game: Game, season: Season, players: list[str]) -> dict[str, int]:
    whole = keys.BoardRef(game.slug, season.id, "all")
    redis = redis_client()
    return {p: int(redis.zscore(whole.for_player(p, season.board_shards).key, p)) for p in players}


def score_ranks_agree(game: Game, season: Season, expected: list[Entry]) -> list[int]:
    """The rank of each entry's own score (`board_ranks`: counts from Redis, arithmetic in
    ranking.py) is its rank; returns the ranks a newcomer would have at each of those scores."""
    view = board_view(slug=game.slug, board="all", region=None, season=None, period=None, now=timezone.now())
    scores = scores_of(game, season, [e[0] for e in expected])
    assert board_ranks(view=view, members=list(scores.items())) == [e[2] for e in expected]
    newcomer = "new"  # between the ids of the tie groups: some come before it, some after
    ranks = board_ranks(view=view, members=[(newcomer, s) for s in scores.values()])
    span = 1 << season.time_bits
    for (player, points, rank), score, got in zip(expected, scores.values(), ranks, strict=True):
        if game.tie_rule == "first":
            ahead = sum(1 for p, s in scores.items() if s > score or (s == score and p < newcomer))
            assert got == 1 + ahead, player
        else:
            assert got == rank and score // span == points, player
    return ranks


def frozen(season: Season) -> list[tuple[int, Entry]]:
    rows = FrozenStanding.objects.filter(season=season, board="all", region=keys.GLOBAL, period=NO_PERIOD)
    return [(pos, (p, s, r)) for pos, p, s, r in rows.order_by("position").values_list(*POSITIONED)]


POSITIONED = ("position", "player_id", "score", "rank")


@pytest.mark.parametrize("rule", RULES)
def test_python_lua_and_sql_rank_every_tie_alike(rule):
    order = display_order()
    ranks = ranks_for([points for _, points in order], rule)
    expected = [(p, points, rank) for (p, points), rank in zip(order, ranks, strict=True)]
    assert [e[2] for e in expected] == by_definition(rule, order)
    assert len({e[1] for e in expected}) < len(expected) / 3, "a board of many ties"

    start = timezone.now() - timedelta(days=5)
    games = [
        make_game("one", tie_rule=rule, start=start),
        make_game("three", tie_rule=rule, start=start, board_shards=3),
    ]
    feed(games)
    seasons = [Season.objects.get(game=g) for g in games]
    assert [s.board_shards for s in seasons] == [1, 3]
    parts = keys.BoardRef(games[1].slug, seasons[1].id, "all").shards(3)
    assert all(redis_client().zcard(part.key) > 0 for part in parts), "every shard holds some of the board"

    newcomers = []
    for game, season in zip(games, seasons, strict=True):
        live_reads_agree(game, expected)
        newcomers.append(score_ranks_agree(game, season, expected))
    assert newcomers[0] == newcomers[1]

    for season in seasons:
        assert season_freeze(season_id=season.id, now=timezone.now()) > 0
        assert frozen(season) == list(enumerate(expected)), "the freeze's SQL"
