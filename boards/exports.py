"""Exports of a frozen season's standings: what a prize payout system reads. Players hidden or
deleted since the freeze are left out, and out of everyone's rank (gone.py)."""

import csv
import io
import json
from collections.abc import Iterator

from seasons.models import Season

from .gone import Gone, board_gone, gone_players
from .models import FrozenStanding

FIELDS = ["season", "board", "region", "period", "rank", "player_id", "score", "tie_rule"]


def _gone_by_board(season: Season) -> dict[tuple[str, str, str], Gone]:
    """Each board's rows of players hidden or deleted since the freeze (gone.py): they are on no
    board, so the export leaves them out and out of the others' ranks, as every read does."""
    ids = gone_players(game_id=season.game_id).values("player_id")
    standings = FrozenStanding.objects.filter(season=season)
    boards = set(standings.filter(player_id__in=ids).values_list("board", "region", "period"))
    rule = season.game.tie_rule
    return {
        (b, r, p): board_gone(standings.filter(board=b, region=r, period=p), rule=rule, game_id=season.game_id)
        for b, r, p in boards
    }


def _rows(season: Season) -> Iterator[list[object]]:
    gone = _gone_by_board(season)
    nobody = Gone(season.game.tie_rule, [], [])
    standings = (
        FrozenStanding.objects.filter(season=season)
        .order_by("board", "region", "period", "position")
        .values_list("board", "region", "period", "rank", "position", "player_id", "score")
    )
    for board, region, period, rank, position, player_id, score in standings.iterator(chunk_size=20_000):
        left = gone.get((board, region, period), nobody)
        if player_id in left.ids:
            continue
        shown = left.rank(rank=rank, position=position)
        yield [season.id, board, region, period, shown, player_id, score, season.game.tie_rule]


def standings_csv(season: Season) -> Iterator[str]:
    """CSV lines (header first), streamed: a 1M-player season is millions of rows."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(FIELDS)
    for row in _rows(season):
        writer.writerow(row)
        if buffer.tell() > 64_000:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def standings_json(season: Season) -> Iterator[str]:
    """One JSON document: {season, game, tie_rule, frozen_at, standings: [{...}, ...]}, streamed."""
    head = {
        "season": season.id,
        "game": season.game.slug,
        "tie_rule": season.game.tie_rule,
        "frozen_at": season.frozen_at.strftime("%Y-%m-%dT%H:%M:%SZ") if season.frozen_at else None,
    }
    yield json.dumps(head)[:-1] + ', "standings": ['
    first = True
    for row in _rows(season):
        item = json.dumps(dict(zip(FIELDS[1:7], row[1:7], strict=True)))
        yield item if first else "," + item
        first = False
    yield "]}"
