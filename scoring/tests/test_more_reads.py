"""The reads of revision 3 (docs/api.md, "Reading boards"): several players at once
(`players?ids=`), the rank of a score (`rank?score=`) and a player's boards
(`players/{id}/boards`), on real Redis and PostgreSQL, over HTTP through both entrances: on a
board of one set the fast entrance answers alone (nothing behind it) with Django's bytes; on a
board split three ways Django answers what a board of one set answers. Each tie rule at its edges
(test_tie_rules.py's board of many ties), a lower-is-better game, hidden players, the 400s, a
frozen season, and the Redis calls each read costs (counted with MONITOR)."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.core.asgi import get_asgi_application
from django.utils import timezone

from boards import selectors
from boards.fastpath import FastReads
from boards.kinds import BOARD_NAMES
from boards.testing import record
from common.operations import FAST_ANSWERS
from common.redis import client as redis_client
from common.testing import asgi_request
from scoring.freezing import season_freeze
from scoring.players import player_delete, player_update
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_tie_rules import RULES, display_order, feed
from seasons.models import Game, Season

pytestmark = pytest.mark.django_db

DJANGO = get_asgi_application()
FAST = FastReads(DJANGO)


async def _no_django(scope, receive, send):
    raise AssertionError(f"Django was asked for {scope['path']}?{scope.get('query_string', b'').decode()}")


FAST_ONLY = FastReads(_no_django)  # the fast entrance with nothing behind it
MAX_SCORE = 9007199254740991


@pytest.fixture(autouse=True)
def _no_read_throttle(settings):
    settings.READ_RATE_PER_S = 0  # hundreds of reads from one address


def same(path: str, query: str = "", *, fast: bool = True):
    """GET through the fast entrance and through Django alone: the same status, headers and bytes.
    `fast`: the fast entrance answers by itself (counted as its own answer); else it hands the
    request to Django. Returns the answer."""
    before = FAST_ANSWERS.total()
    answered = asgi_request(FAST_ONLY if fast else FAST, path, query)
    assert FAST_ANSWERS.total() == before + (1 if fast else 0), (path, query, "answered by the wrong entrance")
    slow = asgi_request(DJANGO, path, query)
    assert (answered.status_code, answered.raw_headers, answered.content) == (
        slow.status_code,
        slow.raw_headers,
        slow.content,
    ), (path, query)
    return answered


def read(game: Game, tail: str, query: str = "", *, fast: bool = True):
    """A board read of `game` through both entrances (the fast one alone on a board of one set)."""
    split = Season.objects.filter(game=game).latest("id").board_shards > 1
    return same(f"/api/v1/games/{game.slug}/{tail}", query, fast=fast and not split)


# --------------------------------------------------------------------------- by definition
def entries(order: list[tuple[str, int]], rule: str) -> list[tuple[str, int, int]]:
    """(player, points, rank) of a board in display order, ranks by the words of docs/api.md."""
    ranks = [
        1 + sum(1 for _, q in order if q > p)
        if rule == "competition"
        else 1 + len({q for _, q in order if q > p})
        if rule == "dense"
        else i + 1
        for i, (_, p) in enumerate(order)
    ]
    return [(player, points, rank) for (player, points), rank in zip(order, ranks, strict=True)]


def rank_of_score(points: list[int], rule: str, score: int, *, better=lambda a, b: a > b) -> dict:
    """rank?score's answer by the words of docs/api.md (exact percentile)."""
    if rule == "competition":
        rank = 1 + sum(1 for q in points if better(q, score))
    elif rule == "dense":
        rank = 1 + len({q for q in points if better(q, score)})
    else:  # as if reached now: after everyone already at the score
        rank = 1 + sum(1 for q in points if better(q, score) or q == score)
    total = len(points)
    lower = sum(1 for q in points if better(score, q))
    percentile = (lower * 1000 // total) / 10 if total else 0.0
    return {"score": score, "rank": rank, "total": total, "percentile": percentile, "percentile_error": 0.0}


def triples(answer) -> list[tuple[str, int, int]]:
    return [(e["player_id"], e["score"], e["rank"]) for e in answer.json()["entries"]]


ASKED = [
    ["t100-a"],  # the last of a tie group reached at eight different times
    ["Zed", "A", "nobody", "k0", "two-3", "t100-h"],  # the bottom, the hub, unknown, mid-groups
    ["c_3", "0", "9z", "a-1"],  # one tie group reached in the same second: by id
    ["ghost", "nobody"],  # none of them
]


@pytest.mark.parametrize("rule", RULES)
def test_players_and_the_rank_of_a_score_follow_each_tie_rule_on_one_set_and_on_three_shards(rule):
    start = timezone.now() - timedelta(days=5)
    games = [
        make_game("one", tie_rule=rule, start=start),
        make_game("three", tie_rule=rule, start=start, board_shards=3),
    ]
    feed(games)
    order = display_order()
    expected = entries(order, rule)
    points = [p for _, p in order]
    distinct = sorted(set(points))
    scores = sorted({0, 1, *distinct, *(p + 1 for p in distinct), *(p - 1 for p in distinct if p), MAX_SCORE})
    for game in games:
        for ids in [*ASKED, [p for p, _ in order]]:
            answer = read(game, "boards/all/players", "ids=" + ",".join(ids))
            assert triples(answer) == [e for e in expected if e[0] in ids], ids
            assert answer.json()["missing"] == [i for i in ids if i not in dict(order)]
        for score in scores:
            assert read(game, "boards/all/rank", f"score={score}").json() == rank_of_score(points, rule, score), score
        # A score equal to a player's: under competition and dense the player's own rank and percentile.
        for player, score in order[::5]:
            got = read(game, "boards/all/rank", f"score={score}").json()
            mine = read(game, f"boards/all/players/{player}").json()
            if rule != "first":
                assert got == {k: mine[k] for k in got}, player
            else:
                assert got["rank"] == 1 + sum(1 for q in points if q >= score) >= mine["rank"]
        # An empty board: everyone missing, any score first of nobody.
        empty = read(game, "boards/all/players", "region=nowhere&ids=A,Zed").json()
        assert empty == {"entries": [], "missing": ["A", "Zed"]}
        for score in (0, 70, MAX_SCORE):
            got = read(game, "boards/all/rank", f"region=nowhere&score={score}").json()
            assert got == {"score": score, "rank": 1, "total": 0, "percentile": 0.0, "percentile_error": 0.0}
    one, three = games
    for tail, query in [("players", "ids=" + ",".join(p for p, _ in order[::-3])), ("rank", "score=40")]:
        assert read(three, f"boards/best/{tail}", query).json() == read(one, f"boards/best/{tail}", query).json()


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("shards", [1, 3])
def test_the_rank_of_a_score_above_the_top_below_the_bottom_and_past_the_exact_ranks(rule, shards, monkeypatch):
    """A board without zeros: a score below the bottom ranks after everyone; with the exact ranks
    cut to 2, the percentile comes from the histogram (one shard's, or the sum of three) and holds
    the exact value within its error, down to below the bottom (no bucket at all: 0, exact)."""
    monkeypatch.setattr(selectors, "EXACT_RANKS", 2)
    game = make_game("edges", tie_rule=rule, board_shards=shards)
    board = [("a", 50), ("b", 50), ("c", 30), ("d", 30), ("e", 30), ("f", 10), ("g", 10), ("h", 5)]
    for i, (player, points) in enumerate(board):
        record(game, player, points, accepted_at=timezone.now() - timedelta(seconds=100 - i))
    points = [p for _, p in board]
    for player, score in board:  # the player read's histogram too (on 3 shards: shards wholly above it)
        mine = read(game, f"boards/all/players/{player}").json()
        exact = rank_of_score(points, "competition", score)["percentile"]
        assert mine["percentile"] <= exact <= mine["percentile"] + mine["percentile_error"], (player, mine)
    for score in [0, 4, 5, 6, 10, 29, 30, 31, 50, 51, 10_000, MAX_SCORE]:
        got = read(game, "boards/all/rank", f"score={score}").json()
        exact = rank_of_score(points, rule, score)
        assert {k: got[k] for k in ("score", "rank", "total")} == {k: exact[k] for k in ("score", "rank", "total")}
        if got["rank"] <= 2:
            assert (got["percentile"], got["percentile_error"]) == (exact["percentile"], 0.0), score
        else:
            low, high = got["percentile"], got["percentile"] + got["percentile_error"]
            assert low - 0.1 <= exact["percentile"] <= high + 0.1, (score, got, exact)
    assert read(game, "boards/all/rank", "score=0").json()["percentile_error"] == 0.0  # below every bucket
    below_the_bottom = {"competition": 9, "dense": 5, "first": 9}[rule]  # dense: after 4 distinct values
    assert read(game, "boards/all/rank", "score=4").json()["rank"] == below_the_bottom


def test_a_lower_is_better_game_ranks_lower_values_first():
    game = make_game("race", ascending=True, max_points=3_600_000)
    times = [("r0", 61_000), ("r1", 61_000), ("r2", 75_500), ("r3", 90_000)]
    for player, ms in times:
        record(game, player, ms)
    values = [ms for _, ms in times]

    def better(a: int, b: int) -> bool:
        return a < b

    capacity = (1 << (53 - Season.objects.get(game=game).time_bits)) - 1
    for score in [0, 60_999, 61_000, 61_001, 90_000, 90_001, capacity, capacity + 1, MAX_SCORE]:
        expected = rank_of_score(values, "competition", score, better=better)
        assert read(game, "boards/all/rank", f"score={score}").json() == expected, score
    answer = read(game, "boards/all/players", "ids=r3,nobody,r0,r2").json()
    assert [(e["player_id"], e["score"], e["rank"]) for e in answer["entries"]] == [
        ("r0", 61_000, 1),
        ("r2", 75_500, 3),
        ("r3", 90_000, 4),
    ]
    assert answer["missing"] == ["nobody"]
    mine = read(game, "players/r2/boards").json()
    assert mine["boards"][0] == {
        "board": "all",
        "period": None,
        "rank": 3,
        "score": 75_500,
        "total": 4,
        "percentile": 25.0,
        "tier": None,
    }


@pytest.mark.parametrize("shards", [1, 3])
def test_hidden_and_deleted_players_are_missing_and_counted_nowhere(shards):
    game = make_game("privacy", board_shards=shards)
    results = [{"player_id": p, "points": 100 - 10 * i} for i, p in enumerate(["amy", "bo", "cy", "di", "ed"])]
    submit_direct(game, make_key(game), match_body(results), now=timezone.now())
    drain()
    player_update(game=game, player_id="bo", hidden=True)
    player_delete(game=game, player_id="di")
    answer = read(game, "boards/all/players", "ids=di,amy,bo,ed").json()
    assert [(e["player_id"], e["rank"]) for e in answer["entries"]] == [("amy", 1), ("ed", 3)]
    assert answer["missing"] == ["di", "bo"]
    assert read(game, "boards/all/rank", "score=95").json()["rank"] == 2  # bo's 90 is not counted
    assert read(game, "boards/all/rank", "score=0").json()["total"] == 3
    for player in ("bo", "di"):
        assert read(game, f"players/{player}/boards").status_code == 404
    player_update(game=game, player_id="bo", hidden=False)  # shown again: back where they were
    assert read(game, "boards/all/players", "ids=bo").json()["entries"][0]["rank"] == 2


BAD_IDS = [
    "",
    "amy,",
    ",amy",
    "amy,,bo",
    "amy,amy",
    "amy,bo,amy",
    "bad id",
    "a" * 65,
    "amy%0A",
    "é",
    ",".join(f"p{i}" for i in range(101)),
]
BAD_SCORES = ["", "-1", "1.5", "1e3", "x", "9007199254740992", "99999999999999999999", "%EF%BC%91", "+1", " 1"]


def test_malformed_ids_and_scores_are_400_invalid_on_both_entrances():
    game = make_game()
    record(game, "amy", 10)
    for ids in BAD_IDS:
        answer = read(game, "boards/all/players", f"ids={ids}")
        assert (answer.status_code, answer.json()["code"]) == (400, "invalid"), ids
    for query in ["", "id=amy", "ids"]:
        assert read(game, "boards/all/players", query).status_code == 400, query
    for score in BAD_SCORES:
        answer = read(game, "boards/all/rank", f"score={score}")
        assert (answer.status_code, answer.json()["code"]) == (400, "invalid"), score
    assert read(game, "boards/all/rank").status_code == 400
    hundred = ",".join(f"p{i}" for i in range(100))
    assert read(game, "boards/all/players", f"ids={hundred}").json()["missing"] == hundred.split(",")
    assert read(game, "boards/all/rank", f"score={MAX_SCORE}").status_code == 200
    assert read(game, "boards/nope/rank", "score=1").json()["code"] == "unknown_board"
    assert read(game, "boards/all/players", "ids=amy&region=EU").json()["code"] == "invalid"
    assert read(game, "players/amy/boards", "region=EU").json()["code"] == "invalid"
    assert same("/api/v1/games/nope/players/amy/boards", fast=False).json()["code"] == "not_found"


@pytest.mark.parametrize("shards", [1, 3])
def test_a_players_boards_lists_every_board_where_the_player_is_ranked(shards):
    game = make_game("profile", tie_rule="dense", board_shards=shards, start=timezone.now() - timedelta(days=60))
    now = timezone.now()
    record(game, "amy", 40, region="eu", name="Amy", accepted_at=now - timedelta(seconds=30))
    record(game, "bo", 70, region="eu", accepted_at=now - timedelta(seconds=20))
    record(game, "cy", 40, region="na", accepted_at=now - timedelta(seconds=10))
    record(game, "amy", 35, region="eu", played_at=now - timedelta(days=40), accepted_at=now - timedelta(seconds=5))
    for region in ("", "region=eu", "region=na"):
        answer = read(game, "players/amy/boards", region)
        if region == "region=na":
            assert answer.status_code == 404 and answer.json()["code"] == "not_ranked"
            continue
        body = answer.json()
        assert (body["player_id"], body["display_name"]) == ("amy", "Amy")
        expected = []
        for board in BOARD_NAMES:  # each board the player read finds them on, in the same order
            one = read(game, f"boards/{board}/players/amy", region)
            if one.status_code == 200:
                top = read(game, f"boards/{board}/top", region).json()
                mine = one.json()
                expected.append(
                    {"board": board, "period": top["period"], "tier": None}
                    | {k: mine[k] for k in ("rank", "score", "total", "percentile")}
                )
        assert sorted(body["boards"], key=lambda b: BOARD_NAMES.index(b["board"])) == body["boards"]
        assert body["boards"] == [{k: e[k] for k in body["boards"][0]} for e in expected]
        assert {b["board"] for b in body["boards"]} >= {"all", "best"}
        season_board = next(b for b in body["boards"] if b["board"] == "all")
        assert (season_board["score"], season_board["rank"]) == (75, 1)  # 40 + 35 (dense: bo 70 is below)
    assert read(game, "players/nobody/boards").json()["code"] == "not_ranked"


def test_a_frozen_season_answers_from_its_standings_leaving_out_players_hidden_since(monkeypatch):
    for rule in RULES:
        game = make_game(f"frozen-{rule}", tie_rule=rule, start=timezone.now() - timedelta(days=5))
        feed([game])
        order = display_order()
        asked = ["Zed", "k0", "nobody", "t100-a", "two-3", "A"]
        ids = "ids=" + ",".join(asked)
        scores = [0, 1, 40, 41, 70, 100, 101]
        live = {
            "players": read(game, "boards/all/players", ids).content,
            "ranks": [read(game, "boards/all/rank", f"score={s}").content for s in scores],
            "boards": read(game, "players/k0/boards").content,
        }
        season = Season.objects.get(game=game)
        assert season_freeze(season_id=season.id, now=timezone.now()) > 0
        frozen = f"season={season.id}&"
        assert read(game, "boards/all/players", frozen + ids, fast=False).content == live["players"]
        assert [read(game, "boards/all/rank", f"{frozen}score={s}", fast=False).content for s in scores] == live[
            "ranks"
        ]
        # The frozen season is still the current one: the player's boards come from its standings.
        assert read(game, "players/k0/boards", fast=False).content == live["boards"]
        player_update(game=game, player_id="k0", hidden=True)
        player_update(game=game, player_id="t100-b", hidden=True)
        visible = [(p, s) for p, s in order if p not in ("k0", "t100-b")]
        answer = read(game, "boards/all/players", frozen + ids, fast=False).json()
        assert [(e["player_id"], e["score"], e["rank"]) for e in answer["entries"]] == [
            e for e in entries(visible, rule) if e[0] in asked
        ]
        assert answer["missing"] == ["k0", "nobody"]
        for s in scores:
            got = read(game, "boards/all/rank", f"{frozen}score={s}", fast=False).json()
            assert got == rank_of_score([p for _, p in visible], rule, s), (rule, s)
        assert read(game, "players/k0/boards", fast=False).status_code == 404


# What a new connection sends first (each test request runs its own event loop, so the fast
# entrance opens a connection for it; a server keeps its connections).
CONNECTION_SETUP = {"PING", "HELLO", "CLIENT", "SELECT", "AUTH"}


@contextmanager
def commands() -> Iterator[list[str]]:
    """The commands clients send to Redis meanwhile (MONITOR), but for a connection's setup and
    what scripts run inside."""
    seen: list[str] = []
    ready = threading.Event()
    end = "monitor-end"

    def watch() -> None:
        with redis.Redis.from_url(settings.REDIS_URL, decode_responses=True).monitor() as monitor:
            ready.set()
            for command in monitor.listen():
                if command["command"] == f"ECHO {end}":
                    return
                name = command["command"].split(" ")[0].upper()
                if command["client_type"] != "lua" and name not in CONNECTION_SETUP:
                    seen.append(name)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    assert ready.wait(5)
    try:
        yield seen
    finally:
        redis_client().echo(end)
        thread.join(5)


def test_each_read_costs_one_redis_call_or_one_per_shard_and_step():
    one = make_game("one", tie_rule="dense")
    three = make_game("three", tie_rule="dense", board_shards=3)
    ids = [f"p{i:03d}" for i in range(100)]
    for game in (one, three):
        for i, player in enumerate(ids):
            record(game, player, i % 17)
    query = "ids=" + ",".join(ids)
    reads = [("boards/all/players", query), ("boards/all/rank", "score=7"), ("players/p007/boards", "")]
    for tail, q in reads:  # scripts loaded, catalogs read
        read(one, tail, q)
        read(three, tail, q)
    for tail, q in reads:
        with commands() as sent:
            assert asgi_request(FAST_ONLY, f"/api/v1/games/one/{tail}", q).status_code == 200
        assert sent == ["EVALSHA"], (tail, sent)  # one call, the catalog's version inside it
    with commands() as sent:
        assert asgi_request(DJANGO, "/api/v1/games/three/boards/all/players", query).status_code == 200
    assert sorted(sent) == sorted(["GET", "ZMSCORE", "ZMSCORE", "ZMSCORE", "HMGET", *["ZRANGEBYSCORE"] * 3]), sent
    three_first = make_game("three-first", tie_rule="first", board_shards=3)
    for i, player in enumerate(ids):
        record(three_first, player, i % 17)
    read(three_first, "boards/all/players", query)
    for tail, q in reads[:2]:
        with commands() as sent:
            assert asgi_request(DJANGO, f"/api/v1/games/three-first/{tail}", q).status_code == 200
        per_shard = sent.count("EVALSHA")
        assert per_shard == 3, (tail, sent)


def test_with_redis_down_each_read_is_the_same_503(settings):
    game = make_game()
    record(game, "amy", 10)
    for tail, query in [("boards/all/players", "ids=amy"), ("boards/all/rank", "score=5"), ("players/amy/boards", "")]:
        assert read(game, tail, query).status_code == 200  # the catalog held by this process
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    for tail, query in [("boards/all/players", "ids=amy"), ("boards/all/rank", "score=5"), ("players/amy/boards", "")]:
        answer = read(game, tail, query)
        assert (answer.status_code, answer.json()["code"], answer["Retry-After"]) == (503, "boards_unavailable", "5")
