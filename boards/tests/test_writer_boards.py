"""The competition boards' batched apply (boards/writer.py `_boards_calls`, lua/apply_boards.lua):
many boards a call on one Redis leave Redis exactly as one call a board (`_competition_calls`,
lua/apply_events.lua) does: the boards, the dense companions, the dedup markers, the versions and
the lifetimes; the same results reported applied, paused and changed."""

import random
from datetime import UTC, date, datetime, timedelta

from boards import keys
from boards.writer import (
    APPLY_SCRIPT,
    ApplyReport,
    CompetitionBoard,
    EventRow,
    _boards_calls,
    _boards_replies,
    _competition_calls,
    _competition_replies,
    _script_calls_run,
)
from common.redis import boards_client, lua_script

START = datetime(2026, 11, 30, tzinfo=UTC)
DEDUP_TTL_S = 7200


def board(game: str, n: int, *, best: bool = False, dense: bool = False, time_bits: int = 20) -> CompetitionBoard:
    tag = f"{{{game}.l.week.1.0.{n}}}"
    return CompetitionBoard(
        game=game,
        key=f"{keys.key_prefix()}:lc:{game}:week:1:0:{n}:b:{tag}",
        tag=tag,
        starts_at=START,
        time_bits=time_bits,
        best=best,
        ascending=False,
        dense=dense,
        ttl_s=0 if n % 5 == 0 else 3600 + n,
    )


def row(event_id: int, player: str, points: int, seconds: int) -> EventRow:
    at = START + timedelta(seconds=seconds, microseconds=event_id)
    return EventRow(event_id, 1, player, points, at, date(2026, 12, 1), None)


def per_board(competitions, chunk: int) -> tuple[ApplyReport, set[str]]:
    """Today's calls on a cluster: one board a call."""
    report = ApplyReport(on_boards=[e.id for rows in competitions.values() for e in rows])
    calls = _competition_calls(competitions, dedup_ttl_s=DEDUP_TTL_S, chunk=chunk)
    replies = _script_calls_run(boards_client(), lua_script(APPLY_SCRIPT), calls, {}, {}, timed=0)
    return report, _competition_replies(calls, replies, report)


def batched(competitions, chunk: int) -> tuple[ApplyReport, set[str]]:
    report = ApplyReport(on_boards=[e.id for rows in competitions.values() for e in rows])
    calls = _boards_calls(competitions, dedup_ttl_s=DEDUP_TTL_S, chunk=chunk)
    replies = _script_calls_run(boards_client(), lua_script(APPLY_SCRIPT), [], {}, {}, timed=0, batched=calls)
    return report, _boards_replies(calls, replies, report)


def redis_state() -> dict[str, object]:
    """Every key's value and whether it has a lifetime (a version: that it counts, not its value,
    which starts at the server's clock)."""
    redis = boards_client()
    state: dict[str, object] = {}
    for key in sorted(redis.scan_iter("*")):
        kind = redis.type(key)
        if kind == "zset":
            value: object = redis.zrange(key, 0, -1, withscores=True)
        elif kind == "hash":
            value = redis.hgetall(key)
        elif kind == "set":
            value = sorted(redis.smembers(key))
        else:
            value = "version" if key.endswith(":v") else redis.get(key)
        ttl = redis.ttl(key)
        state[key] = (value, ttl > 0 and round(ttl, -2))
    return state


def rounds(seed: int) -> list[dict[CompetitionBoard, list[EventRow]]]:
    """Three applies over the boards of two games: sums and bests, dense or not, an overflowing
    result, zero points, redelivered results, a hidden player, results in any order."""
    rng = random.Random(seed)
    boards = [board("arena", n, best=n % 3 == 0, dense=n % 2 == 0, time_bits=20 if n % 4 else 40) for n in range(12)]
    boards += [board("kart", n, dense=True) for n in range(4)]
    players = [f"p{i}" for i in range(40)] + ["hidden-one"]
    event_id = 1000
    sent: list[tuple[CompetitionBoard, EventRow]] = []
    applies = []
    for _ in range(3):
        competitions: dict[CompetitionBoard, list[EventRow]] = {}
        for b in rng.sample(boards, 10):
            rows = competitions.setdefault(b, [])
            for _ in range(rng.randint(1, 9)):
                event_id += rng.randint(1, 300)  # across dedup groups
                points = rng.choice([0, 0, 1, 5, 70, 2**20])  # 2**20: past a 40-bit codec's capacity
                rows.append(row(event_id, rng.choice(players), points, rng.randint(0, 500_000)))
                sent.append((b, rows[-1]))
        for b, e in rng.sample(sent, 8):  # redeliveries, on their own board
            competitions.setdefault(b, []).append(e)
        for rows in competitions.values():
            rng.shuffle(rows)
        applies.append(competitions)
    return applies


def run(apply, applies, chunk: int) -> list[object]:
    redis = boards_client()
    redis.flushall()
    redis.sadd(keys.hidden_key("arena"), "hidden-one")
    seen: list[object] = []
    for competitions in applies:
        report, changed = apply(competitions, chunk)
        seen.append((sorted(report.on_boards), report.paused, sorted(changed)))
    seen.append(redis_state())
    return seen


def test_batched_calls_leave_the_boards_of_one_call_a_board():
    for seed in range(4):
        applies = rounds(seed)
        for chunk in (2000, 7):  # one call for all; a board's results over several calls
            expected = run(per_board, applies, chunk)
            assert run(batched, applies, chunk) == expected, (seed, chunk)
            boards = [key for key, (value, _) in expected[-1].items() if ":b:" in key and not key.endswith(":v")]
            assert len(boards) > 10, "the boards were written"


def test_batched_calls_many_boards_a_call_one_game_a_call():
    applies = rounds(9)[0]
    calls = _boards_calls(applies, dedup_ttl_s=DEDUP_TTL_S, chunk=2000)
    games = {b.key: b.game for b in applies}
    assert sorted((games[call.segments[0][0]], len(call.segments)) for call in calls) == [
        ("arena", sum(b.game == "arena" for b in applies)),
        ("kart", sum(b.game == "kart" for b in applies)),
    ]
    assert all(len({games[key] for key, _ in call.segments}) == 1 for call in calls)
    calls = _boards_calls(applies, dedup_ttl_s=DEDUP_TTL_S, chunk=10)
    assert all(sum(len(rows) for _, rows in call.segments) <= 10 for call in calls)
    assert sum(len(rows) for call in calls for _, rows in call.segments) == sum(map(len, applies.values()))


def test_a_paused_game_applies_nothing_and_its_results_stay_unapplied():
    applies = rounds(3)[0]
    redis = boards_client()
    redis.set(keys.pause_key("arena"), 1)
    report, changed = batched(applies, 2000)
    kart = {e.id for b, rows in applies.items() if b.game == "kart" for e in rows}
    assert set(report.on_boards) == kart
    assert report.paused == len({e.id for b, rows in applies.items() if b.game == "arena" for e in rows})
    assert changed == {b.key for b in applies if b.game == "kart"}
    assert not [key for key in redis.scan_iter("*") if ":arena:" in key or "{arena." in key]


def test_on_one_redis_the_competition_boards_markers_share_the_hashes_of_128_ids():
    """A cohort holds one or two of a batch's results: its markers go in the hashes every
    competition board shares (one per 128 event ids, the board's tag in the field), not in a hash
    of its own per 128 ids (a key and its expiry per result)."""
    redis = boards_client()
    redis.flushall()
    boards = [board("arena", n) for n in range(50)]
    competitions = {b: [row(5000 + n, f"p{n}", 10, 60)] for n, b in enumerate(boards)}  # ids 5000-5049
    competitions[boards[0]].append(row(5000 + 200, "p0", 5, 90))  # the next group of 128
    _, changed = batched(competitions, 2000)
    assert len(changed) == 50
    markers = sorted(redis.scan_iter(f"{keys.key_prefix()}:dd:*"))
    assert markers == [f"{keys.key_prefix()}:dd:c:{5000 // 128}", f"{keys.key_prefix()}:dd:c:{5200 // 128}"]
    assert redis.hlen(markers[0]) == 50 and redis.ttl(markers[0]) > DEDUP_TTL_S - 60
    field = f"{5003 % 128}{boards[3].tag}"
    assert redis.hget(markers[0], field) == keys.dedup_tag(5003, competitions[boards[3]][0].accepted_at)
    # Redelivered, each is skipped by its own board's marker: nothing changes.
    _, changed = batched(competitions, 2000)
    assert changed == set() and redis.zscore(boards[3].key, "p3") is not None
