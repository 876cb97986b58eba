"""Windows derived from the daily primitive: a week's board re-derived from its seven day boards.

Scores are composites (points and reach time), so the days cannot be added with ZUNIONSTORE SUM:
each day's score is decoded, points are summed and the reach time combined by the writer's rule
(latest positive reach; the earliest while all are zero), then encoded again. (A best-of board
would be ZUNIONSTORE AGGREGATE MAX: the largest composite is the best points reached first.)
The game's applies are paused while the week is read and swapped, so the days and the week are
one consistent moment; results arriving meanwhile wait and are applied after.
"""

from dataclasses import dataclass
from datetime import timedelta

from seasons.models import Season
from seasons.periods import week_start

from . import redis_boards
from .encoding import ScoreCodec

PAUSE_TTL_S = 120


@dataclass
class WeekReport:
    week: str
    boards: int = 0
    members: int = 0
    differences: int = 0
    swapped: bool = False


def _merge_days(client, codec: ScoreCodec, day_keys: list[str], *, ascending: bool = False) -> dict[str, int]:
    if ascending:  # every board keeps the best value: the largest stored composite (ZUNIONSTORE MAX)
        best: dict[str, int] = {}
        for key in day_keys:
            for player, score in client.zscan_iter(key, count=5000):
                best[player] = max(best.get(player, 0), int(score))
        return best
    totals: dict[str, list[int]] = {}  # player -> [points, latest positive reach or -1, earliest reach]
    for key in day_keys:
        for player, score in client.zscan_iter(key, count=5000):
            points, reached = codec.points(score), codec.reached_s(score)
            entry = totals.setdefault(player, [0, -1, reached])
            entry[0] += points
            if points > 0:
                entry[1] = max(entry[1], reached)
            entry[2] = min(entry[2], reached)
    return {
        player: codec.encode(points=points, reached_s=positive if points > 0 else earliest)
        for player, (points, positive, earliest) in totals.items()
    }


def week_rebuild(*, season: Season, week: str, swap: bool) -> WeekReport:
    """Re-derive every region's board of `week` from its day boards; compare with the live week
    (and with `swap`, replace it)."""
    client = redis_boards.client()
    game = season.game.slug
    codec = ScoreCodec(season.time_bits)
    start = week_start(week)
    days = [(start + timedelta(days=i)).isoformat() for i in range(7)]
    report = WeekReport(week=week)
    client.set(redis_boards.pause_key(game), "rebuild_week", ex=PAUSE_TTL_S)
    try:
        regions = {
            str(key).split(":")[5]
            for day in days
            for key in client.scan_iter(match=redis_boards.BoardRef(game, season.id, "daily", "*", day).key)
        }
        for region in sorted(regions):
            day_keys = [redis_boards.BoardRef(game, season.id, "daily", region, day).key for day in days]
            derived = _merge_days(client, codec, day_keys, ascending=season.game.ascending)
            week_key = redis_boards.BoardRef(game, season.id, "weekly", region, week).key
            live = {str(m): int(float(s)) for m, s in client.zscan_iter(week_key, count=5000)}
            report.boards += 1
            report.members += len(derived)
            report.differences += sum(1 for p in derived.keys() | live.keys() if derived.get(p) != live.get(p))
            if swap and derived:
                temp = week_key + ":rebuild"
                pipe = client.pipeline(transaction=True)
                pipe.delete(temp)
                items = list(derived.items())
                for i in range(0, len(items), 5000):
                    pipe.zadd(temp, dict(items[i : i + 5000]))
                pipe.expire(temp, redis_boards.board_ttl_s("weekly"))
                pipe.rename(temp, week_key)
                pipe.execute()
                report.swapped = True
    finally:
        client.delete(redis_boards.pause_key(game))
    return report
