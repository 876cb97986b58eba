"""Every operation is declared once (common/operations.py) and each entrance is built from that
declaration: Django's URL patterns are exactly the declared operations, the OpenAPI document lists
each with its declared parameters, bounds and errors, and each declared answer shape renders a real
answer as its DRF serializer does."""

from django.urls import get_resolver
from django.utils import timezone

from boards import apis as board_apis
from boards.lookups import current_boards, player_boards
from boards.selectors import board_view, game_detail, game_seasons
from boards.services import friendship_add
from boards.testing import record
from competitions import apis as competition_apis
from competitions import league_apis
from scoring import apis as scoring_apis
from scoring.selectors import OwnRank
from seasons.catalog import catalog_get
from seasons.testing import make_game

OPERATIONS = [
    *board_apis.OPERATIONS,
    *scoring_apis.OPERATIONS,
    *competition_apis.OPERATIONS,
    *league_apis.LEAGUE_OPERATIONS,
]


def test_the_api_urls_are_exactly_the_declared_operations():
    api = next(p for p in get_resolver().url_patterns if str(p.pattern) == "api/v1/")
    served = {}
    for group in api.url_patterns:
        for pattern in group.url_patterns:
            view = pattern.callback.view_class
            methods = {m for m in ("get", "post", "put", "patch", "delete") if m in view.__dict__}
            served[str(pattern.pattern)] = methods
    declared: dict[str, set[str]] = {}
    for op in OPERATIONS:
        route = op.path.replace("{", "<str:").replace("}", ">")
        declared.setdefault(route, set()).add(op.method.lower())
    assert served == declared


def test_the_openapi_document_is_the_declarations(client):
    document = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    listed = {
        (method.upper(), path): operation
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }
    assert len(listed) == len(OPERATIONS)
    for op in OPERATIONS:
        operation = listed[(op.method, "/api/v1/" + op.path)]
        assert operation["operationId"] == op.id
        params = {(p["in"], p["name"]): p for p in operation.get("parameters", [])}
        for query in op.query:
            assert params[("query", query.name)]["schema"] == dict(query.schema), (op.id, query.name)
        for path_param in op.path_params:
            assert ("path", path_param.name) in params
        statuses = {int(status) for status in operation["responses"]}
        assert statuses == {op.status, *op.also, *(problem.status for problem in op.errors)}, op.id
    top = listed[("GET", "/api/v1/games/{game}/boards/{board}/top")]
    board = next(p for p in top["parameters"] if p["name"] == "board")
    assert board["schema"]["enum"] == ["all", "daily", "weekly", "monthly", "best"]  # one path, not five
    n = next(p for p in top["parameters"] if p["name"] == "n")
    assert (n["schema"]["minimum"], n["schema"]["maximum"], n["schema"]["default"]) == (1, 1000, 100)


def test_each_declared_shape_renders_real_answers_as_its_serializer_does(db):
    game = make_game()
    for i in range(12):
        record(game, f"p{i:02d}", 100 - 7 * (i // 2), region="eu", name=None if i == 3 else f"P{i}")
    friendship_add(game=game, player_id="p04", friend_id="p09")
    now = timezone.now()
    checked = 0
    for op in board_apis.OPERATIONS:
        if not isinstance(op.fast, board_apis.BoardRead):
            continue
        for board in ("all", "best", "daily"):
            args = {"game": "arena", "board": board, "player_id": "p04", "n": 5, "r": 2, "ids": ["p09", "x", "p04"]}
            args["score"] = 79
            view = board_view(slug="arena", board=board, region=None, season=None, period=None, now=now)
            answer = op.fast.present(view, args, op.fast.select(view, args))
            assert op.render(answer) == op.answer(answer).data, (op.id, board)
            checked += 1
    catalog = catalog_get(slug="arena")
    boards = player_boards(views=current_boards(catalog=catalog, region="eu", now=now), player_id="p04")
    others = [
        ("game_detail", game_detail(slug="arena", now=now)),
        ("game_seasons", game_seasons(slug="arena", now=now)),
        ("player_rank", OwnRank(player_id="p04", score=86, rank=5, hidden=True)),
        ("player_boards", boards),
    ]
    by_id = {op.id: op for op in OPERATIONS}
    for op_id, answer in others:
        assert by_id[op_id].render(answer) == by_id[op_id].answer(answer).data, op_id
        checked += 1
    assert checked == 7 * 3 + 4
