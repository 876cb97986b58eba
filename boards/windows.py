"""Windows derived from the daily primitive: a week's board re-derived from its seven day boards.

Scores are composites (points and reach time), so the days cannot be added with ZUNIONSTORE SUM:
each day's score is read back as a `Tally` and folded by the scoring rule (tally.py), the same
rule the writer applies, then encoded again. The game's applies are paused while the week is read
and swapped, so the days and the week are one consistent moment; results arriving meanwhile wait
and are applied after.
"""

from dataclasses import dataclass
from datetime import timedelta

from common.redis import boards_client
from seasons.models import Season
from seasons.periods import WEEK

from . import keys
from .codec import ScoreCodec
from .keys import BoardRef
from .kinds import DAILY, WEEKLY
from .ranking import needs_distinct_points
from .staging import game_paused, versions_renew
from .tally import Tally


@dataclass
class WeekReport:
    week: str
    boards: int = 0
    members: int = 0
    differences: int = 0
    swapped: bool = False


def _merge_days(codec: ScoreCodec, day_keys: list[str], *, ascending: bool) -> dict[str, int]:
    redis = boards_client()
    tallies: dict[str, Tally] = {}
    for key in day_keys:
        for player, score in redis.zscan_iter(key, count=5000):
            day = Tally.of_score(codec, int(score), ascending=ascending)
            found = tallies.get(player)
            if found is None:
                tallies[player] = day
            else:
                found.merge(day)
    return {player: tally.score(codec, best=WEEKLY.best, ascending=ascending) for player, tally in tallies.items()}


def week_rebuild(*, season: Season, week: str, swap: bool) -> WeekReport:
    """Re-derive every region's board of `week` from its day boards; compare with the live week
    (and with `swap`, replace it)."""
    redis = boards_client()
    game = season.game.slug
    codec = ScoreCodec(season.time_bits)
    first = WEEK.start(week)
    day_labels = [DAILY.period_of(first + timedelta(days=i)) for i in range(7)]
    dense = needs_distinct_points(season.game.tie_rule)
    report = WeekReport(week=week)
    with game_paused(game, "rebuild_week"):
        regions = {
            BoardRef.from_key(str(key)).region
            for label in day_labels
            for key in redis.scan_iter(match=keys.region_pattern(game, season.id, DAILY.name, label))
        }
        for region in sorted(regions):
            day_keys = [BoardRef(game, season.id, DAILY.name, region, label).key for label in day_labels]
            derived = _merge_days(codec, day_keys, ascending=season.game.ascending)
            week_key = BoardRef(game, season.id, WEEKLY.name, region, week).key
            live = {str(m): int(float(s)) for m, s in redis.zscan_iter(week_key, count=5000)}
            report.boards += 1
            report.members += len(derived)
            report.differences += sum(1 for p in derived.keys() | live.keys() if derived.get(p) != live.get(p))
            if swap and derived:
                temp = week_key + keys.REBUILD_SUFFIX
                pipe = redis.pipeline(transaction=True)
                pipe.delete(temp)
                items = list(derived.items())
                for i in range(0, len(items), 5000):
                    pipe.zadd(temp, dict(items[i : i + 5000]))
                pipe.expire(temp, WEEKLY.ttl_s())
                pipe.execute_command("RENAME", temp, week_key)  # one slot: see staging.boards_swap
                versions_renew(pipe, [week_key])
                if dense:  # the dense rule counts distinct points: the companion follows the board
                    companion = keys.distinct_key(week_key)
                    distinct = {str(p): p for p in {codec.points(score) for score in derived.values()}}
                    pipe.delete(companion)
                    pipe.zadd(companion, distinct)
                    pipe.expire(companion, WEEKLY.ttl_s())
                pipe.execute()
                report.swapped = True
    return report
