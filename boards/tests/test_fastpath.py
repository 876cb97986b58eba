"""The fast path answers byte for byte what Django's views answer: status, headers and body, for
every hot read, the errors it hands to Django, and Redis being down."""

from datetime import timedelta

import pytest
from django.core.asgi import get_asgi_application
from django.db import transaction
from django.utils import timezone

from boards import selectors
from boards.fastpath import ROUTER, FastReads
from boards.keys import BoardRef
from boards.services import friendship_add
from boards.standings import standings_store
from boards.tally import BoardScores, board_entries
from boards.testing import record
from common.operations import FAST_ANSWERS
from common.redis import client as redis_client
from common.testing import asgi_request, asgi_requests_together
from seasons.catalog import catalog_publish
from seasons.services import season_end, season_mark_frozen
from seasons.testing import make_game

pytestmark = pytest.mark.django_db

DJANGO = get_asgi_application()
FAST = FastReads(DJANGO)

NAMES = ["Amy", "Zoë Ørsted", "名前", "line\u2028break", 'quote "q" \\ slash', "emoji 🎮"]


async def _no_django(scope, receive, send):
    raise AssertionError(f"Django was asked for {scope['path']}?{scope.get('query_string', b'').decode()}")


FAST_ONLY = FastReads(_no_django)  # the fast entrance with nothing behind it


def same(path: str, query: str = "", *, fast: bool = True) -> int:
    """GET through the fast entrance and through Django alone; they must agree on everything.
    `fast`: the fast entrance answers by itself (with nothing behind it, and counted as its own
    answer); else it hands the request to Django. Returns the status."""
    before = FAST_ANSWERS.total()
    answered = asgi_request(FAST_ONLY if fast else FAST, path, query)
    assert FAST_ANSWERS.total() == before + (1 if fast else 0), (path, query, "answered by the wrong entrance")
    slow = asgi_request(DJANGO, path, query)
    assert (answered.status_code, answered.raw_headers, answered.content) == (
        slow.status_code,
        slow.raw_headers,
        slow.content,
    ), (path, query)
    return answered.status_code


def seed(game, count: int = 40) -> None:
    for i in range(count):
        points = 1000 - (i // 3) * 7  # ties in threes
        record(game, f"p{i:02d}", points, region="eu" if i % 2 else "na", name=NAMES[i % len(NAMES)] + f" {i}")


@pytest.mark.parametrize("rule", ["competition", "dense", "first"])
def test_every_hot_read_is_byte_identical(rule, monkeypatch):
    monkeypatch.setattr(selectors, "EXACT_RANKS", 5)  # 10,000 in production: the histogram's tail too
    game = make_game(tie_rule=rule)
    seed(game)
    friendship_add(game=game, player_id="p03", friend_id="p17")
    friendship_add(game=game, player_id="p03", friend_id="p39")
    base = "/api/v1/games/arena/boards"
    day = timezone.now().date().isoformat()
    for query in ["", "n=1", "n=7", "n=1000", "region=eu", "region=na&n=3"]:
        assert same(f"{base}/all/top", query) == 200
        assert same(f"{base}/all/top", query) == 200  # again: from the version-checked copy
    for board, query in [("daily", f"period={day}"), ("weekly", ""), ("monthly", ""), ("best", "")]:
        assert same(f"{base}/{board}/top", query) == 200
    for player in ["p00", "p03", "p04", "p20", "p39"]:
        assert same(f"{base}/all/players/{player}") == 200
        assert same(f"{base}/all/players/{player}", "region=eu" if int(player[1:]) % 2 else "region=na") == 200
        for r in ["0", "2", "50"]:
            assert same(f"{base}/all/players/{player}/around", f"r={r}") == 200
        assert same(f"{base}/all/players/{player}/friends") == 200
    assert same(f"{base}/all/distribution") == 200
    assert same(f"{base}/all/distribution") == 200
    assert same(f"{base}/best/distribution", "region=eu") == 200


def test_every_declared_fast_read_is_answered_by_the_fast_entrance_with_djangos_bytes():
    """Each operation the fast entrance serves (from the declarations: a new read is covered by
    being declared), on a board of one set: answered by the fast entrance alone, counted under its
    own operation, with the bytes Django answers."""
    game = make_game()
    seed(game)
    ops = ROUTER.operations
    assert {op.id for op in ops} >= {
        "board_top",
        "board_player",
        "board_around",
        "board_friends",
        "board_distribution",
        "game_detail",
        "game_seasons",
        "board_players",
        "board_score_rank",
        "player_boards",
    }
    for op in ops:
        path = "/api/v1/" + op.path.format(game="arena", board="all", player_id="p03")
        query = "&".join(f"{q.name}={q.example}" for q in op.query if q.required)  # their declared examples
        asgi_request(DJANGO, path, query)  # what Django builds on a first read (the regions set) is there
        before = FAST_ANSWERS[op.id]
        assert same(path, query) == 200, op.id
        assert FAST_ANSWERS[op.id] == before + 1, op.id


def test_what_the_fast_path_hands_to_django_is_answered_the_same():
    game = make_game()
    seed(game, 8)
    base = "/api/v1/games/arena/boards"
    assert same(f"{base}/all/players/nobody") == 404  # not ranked
    assert same(f"{base}/all/players/nobody/around") == 404
    assert same(f"{base}/all/players/nobody/friends") == 200  # nobody and no friends: an empty list
    assert same("/api/v1/games/nope/boards/all/top", fast=False) == 404  # no catalog: Django looks for the game
    assert same(f"{base}/nope/top") == 404
    for query in ["n=5&n=7", "region=%65u&n=%33", "n=7&region=", "x=%ff%fe&n=2"]:  # repeated, encoded, blank, bytes
        assert same(f"{base}/all/top", query) == 200
    for query in ["n=0", "n=1001", "n=x", "region=EU", "season=x", "season=999", "period=2026-01-01"]:
        assert same(f"{base}/all/top", query) in (400, 404)
    assert same(f"{base}/daily/top", "period=2026-02-30") == 400
    assert same(f"{base}/all/players/p01/around", "r=51") == 400
    old = game.seasons.get()
    season_end(game=game, now=timezone.now(), grace_s=0)
    board = BoardRef("arena", old.id, "all")
    scores = {str(m): int(s) for m, s in redis_client().zrange(board.key, 0, -1, withscores=True)}
    with transaction.atomic():  # a freeze, as scoring does it from the ledger
        board_scores = BoardScores(ref=board, scores=scores, last_write=timezone.now())
        standings_store(season=old, entries=board_entries([board_scores]))
        season_mark_frozen(season=old, now=timezone.now())
    catalog_publish(slug="arena")
    assert same(f"{base}/all/top", f"season={old.id}", fast=False) == 200  # final standings: Django reads PostgreSQL
    assert same(f"{base}/all/players/p01", f"season={old.id}", fast=False) == 200


def test_ascending_games_and_redis_down_are_the_same(settings):
    game = make_game(ascending=True, max_points=3_600_000)
    for i, ms in enumerate([61_000, 61_000, 75_500, 90_000]):
        record(game, f"r{i}", ms)
    base = "/api/v1/games/arena/boards"
    assert same(f"{base}/all/top") == 200
    assert same(f"{base}/all/players/r2") == 200
    assert same(f"{base}/all/distribution") == 200
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    assert same(f"{base}/all/top") == 503
    assert same(f"{base}/all/players/r2") == 503


def _json_without_season(response) -> object:
    body = response.json()
    if isinstance(body, dict):
        body.pop("season", None)
    return body


@pytest.mark.parametrize("rule", ["competition", "dense"])
def test_a_board_split_by_player_answers_over_http_as_one_set_does(rule, monkeypatch):
    """A game whose boards are split four ways: the fast path hands its reads to Django (but for a
    top n or a distribution it holds at every shard's version), and the answers equal those of a game with one set
    per board holding the same results; after a new result, the held top n is not served."""
    start = timezone.now().replace(microsecond=0) - timedelta(days=1)
    games = [
        make_game("one", tie_rule=rule, start=start),
        make_game("four", tie_rule=rule, start=start, board_shards=4),
    ]
    accepted = timezone.now().replace(microsecond=0)
    for game in games:
        for i in range(40):
            points = 1000 - (i // 3) * 7
            region = "eu" if i % 2 else "na"
            record(
                game, f"p{i:02d}", points, region=region, name=f"P {i}", accepted_at=accepted + timedelta(seconds=i % 4)
            )
        friendship_add(game=game, player_id="p03", friend_id="p17")
    paths = [("top", ""), ("top", "n=5"), ("top", "region=eu"), ("distribution", "")]
    for player in ["p00", "p03", "p20", "p39", "nobody"]:
        paths += [(f"players/{player}", ""), (f"players/{player}/around", "r=3"), (f"players/{player}/friends", "")]
    for path, query in paths:
        held = path in ("top", "distribution")  # cached answers: the second is served from the copy Django read
        assert same(f"/api/v1/games/four/boards/all/{path}", query, fast=False) in (200, 404)
        assert same(f"/api/v1/games/four/boards/all/{path}", query, fast=held) in (200, 404)
        one = asgi_request(FAST, f"/api/v1/games/one/boards/all/{path}", query)
        four = asgi_request(FAST, f"/api/v1/games/four/boards/all/{path}", query)
        assert (four.status_code, _json_without_season(four)) == (one.status_code, _json_without_season(one)), path
    for game in games:
        record(game, "p39", 5000, region="eu", accepted_at=accepted + timedelta(seconds=9))
    one = asgi_request(FAST, "/api/v1/games/one/boards/all/top", "n=5")
    four = asgi_request(FAST, "/api/v1/games/four/boards/all/top", "n=5")
    assert four.json()["entries"][0]["player_id"] == "p39"
    assert _json_without_season(four) == _json_without_season(one)

    def unreachable(*args, **kwargs):
        raise AssertionError("Django read the shards of a top n the fast path holds")

    monkeypatch.setattr(selectors, "_split_top", unreachable)
    again = asgi_request(FAST, "/api/v1/games/four/boards/all/top", "n=5")  # nothing changed: the held copy
    assert (again.status_code, again.content) == (200, four.content)


def test_a_burst_beyond_the_connection_pool_waits_for_a_connection_instead_of_failing():
    """400 reads at once in one process: more than the Redis pool's 100 connections. They queue for
    a connection (BlockingConnectionPool); with redis-py 8's default pool the extra ones failed at
    once with MaxConnectionsError, answered as 503 `boards_unavailable` (seen in the reads bench)."""
    game = make_game()
    seed(game)
    requests = [
        {
            "path": f"/api/v1/games/arena/boards/all/players/p{i % 40:02d}",
            "client": (f"10.1.{i // 200}.{i % 200}", 50000),  # each its own read bucket
        }
        for i in range(400)
    ]
    answers = asgi_requests_together(FAST, requests)
    assert [a.status_code for a in answers] == [200] * 400, {a.status_code for a in answers}


def test_reads_beyond_the_pool_for_too_long_are_503_and_logged_as_overload_not_redis_down(settings, caplog):
    """Every pooled connection busy for the whole wait: the same 503 `boards_unavailable` (with
    Retry-After) as a Redis that is down, but the log line says the process is overloaded."""
    from boards import fastpath

    game = make_game()
    seed(game)
    settings.REDIS_FAST_PATH_CONNECTIONS = 1
    settings.REDIS_SOCKET_TIMEOUT_S = 0.2
    fast = FastReads(DJANGO)

    async def holding_the_only_connection(scope, receive, send):
        pool = fast.client().connection_pool
        held = await pool.get_connection()
        try:
            await fast(scope, receive, send)
        finally:
            await pool.release(held)

    fastpath._last_unavailable_log = 0.0
    with caplog.at_level("WARNING", logger="boards.fastpath"):
        answer = asgi_request(holding_the_only_connection, "/api/v1/games/arena/boards/all/players/p01")
    assert answer.status_code == 503
    assert answer.json()["code"] == "boards_unavailable"
    assert answer.headers["Retry-After"] == "5"
    assert any("fast path overloaded: all 1 Redis connections" in r.getMessage() for r in caplog.records)
    assert not any("redis unavailable" in r.getMessage() for r in caplog.records)
    # With the connection free again the same read is answered.
    assert asgi_request(fast, "/api/v1/games/arena/boards/all/players/p01").status_code == 200


def test_a_redis_that_lost_its_scripts_is_read_again_by_the_fast_entrance():
    """SCRIPT FLUSH (as after a Redis restart): the fast entrance loads its scripts again and
    answers, itself."""
    game = make_game()
    seed(game, 8)
    path = "/api/v1/games/arena/boards/all/players/p03"
    assert same(path) == 200
    redis_client().script_flush()
    assert same(path) == 200
