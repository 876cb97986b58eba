"""Reconciliation: the live boards compared with the ledger, member by member, and drift repaired.

Drift is a board entry that differs from what the ledger says it must be: a wrong score, a missing
member, a member the ledger does not have (a ghost). The cure for an apply lost in a Redis
failover, a restore of an older snapshot, or a hand that touched Redis. `reconcile_boards`
(command) and the beat task `scoring.boards_reconcile` (every RECONCILE_INTERVAL_S, a sample)
call `boards_reconcile`:

- A sample (the default): up to `sample` players drawn from the players table (primary-key probes,
  which no statistics can turn into a scan), and up to `sample / 2` from each live season's `all`
  and `best` global boards in Redis (ZRANDMEMBER, so ghosts can be drawn too). Their entries on
  every board of the live seasons are compared.
- `full`: every board of every live season. The ledger streams each season's kinds
  (`ledger_entries`, as the rebuild reads it) and each chunk is compared with ZMSCORE; then the
  members of a board beyond those the ledger has are ghosts (ZSCAN). Memory: the member ids of one
  kind of one season (about 100 bytes each).

What differs at first sight is looked at again, player by player, before it counts: a player with
a result accepted but not applied yet is skipped (it is on its way, not drift), and so is one
whose results changed while they were compared (new, revoked, hidden). The rest is drift: their
drifted entries are rewritten from the ledger (`corrections.player_boards_rewrite`, one Lua call
per season with the dedup markers, as corrections do). Above REBUILD_ABOVE drifted entries the game
is rebuilt instead (`boards_rebuild`, live seasons).

The boards and counters of the tournament periods not final are compared too, each period whole
(reconcile_periods.py), and the assignment state and cohort boards of the league periods not ended
(reconcile_leagues.py), and repaired the same way; they never make the game rebuild.

Only live seasons (not frozen) are compared: a frozen season is read from its standings. A day,
week or month board near the end of its lifetime (within MARGIN_S, by the ledger's clock or by
its TTL in Redis) is not compared: Redis may drop it a moment before or after the ledger says.
The drift found is counted in the metrics (`reconcile_drift:{game}`, /metrics).
"""

import logging
import random
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import OperationalError, connection
from django.utils import timezone

from boards.epoch import epoch_get
from boards.keys import GLOBAL, BoardRef, is_board_key, pause_key, rebuild_lock_key, season_pattern, shard_of
from boards.kinds import ALL, BEST, KINDS, BoardKind
from boards.models import Player
from boards.tally import BoardScores, moment_of
from boards.writer import GamePaused
from common.locks import lock_taken
from common.metrics import count, gauge_set
from common.redis import boards_client, client
from seasons.models import Game, Season
from seasons.selectors import seasons_of

from .corrections import player_boards_rewrite
from .ledger_partitions import played_window
from .models import EventStatus, ScoreEvent
from .rebuild import RebuildBusy, boards_rebuild
from .reconcile_leagues import leagues_reconcile
from .reconcile_periods import PeriodsReport, periods_reconcile
from .selectors import ledger_boards, ledger_entries, ledger_has_extra_boards

logger = logging.getLogger(__name__)

SAMPLE = 1000  # players per run of the beat task
MARGIN_S = 600  # periodic boards this close to the end of their lifetime are not compared
REBUILD_ABOVE = 10_000  # more drifted entries than this: rebuild the game rather than repair them one by one
CONFIRM_BATCH = 500  # players looked at again per round
SAMPLE_ROUNDS = 4  # rounds of primary-key probes at most, to find `sample` players of the game
EXAMPLES = 5  # drifted entries shown in the report


@dataclass
class Drift:
    key: str
    player: str
    live: int | None  # the encoded score on the board (None: not on it)
    ledger: int | None  # what the ledger says (None: must not be on it)


@dataclass
class ReconcileReport:
    game: str
    full: bool
    players: int = 0  # players sampled (sample mode)
    boards: int = 0  # boards compared
    entries: int = 0  # (board, member) pairs compared
    candidates: int = 0  # entries that differed at first sight
    pending: int = 0  # of those: players with results on their way (not drift)
    moved: int = 0  # of those: players whose results changed while compared (looked at next time)
    drift: int = 0  # entries that differ from the ledger
    drifted_players: int = 0
    repaired: int = 0  # boards rewritten
    unrepaired: int = 0  # players left for the next run (a rebuild's pause, a concurrent change)
    rebuilt: bool = False  # the game was rebuilt instead
    periods: int = 0  # tournament and league periods not final compared (reconcile_periods.py, reconcile_leagues.py)
    counters_filled: int = 0  # of those: counters or league states filled from the database (they had lost their data)
    skipped: str = ""  # why nothing was compared
    seconds: float = 0.0
    examples: list[tuple[str, str, int | None, int | None]] = field(default_factory=list)


@dataclass
class _Scan:
    """What the first look found: per player, the keys that differed (with both scores), and the
    last write of each periodic board the ledger knows (for the lifetime of a board a repair
    recreates)."""

    candidates: dict[str, dict[str, tuple[int | None, int | None]]] = field(default_factory=dict)
    board_last: dict[str, datetime] = field(default_factory=dict)

    def add(self, key: str, player: str, live: int | None, want: int | None) -> None:
        self.candidates.setdefault(player, {})[key] = (live, want)


def boards_reconcile(
    *,
    game: Game,
    full: bool = False,
    sample: int = SAMPLE,
    repair: bool = True,
    now: datetime | None = None,
    rng: random.Random | None = None,
) -> ReconcileReport:
    """Compare the game's live boards with the ledger (a sample of players, or `full`), repair the
    drift unless `repair` is False, count it in the metrics. Skips the game while a rebuild of it
    runs or while the boards marker is missing (the recovery rebuilds everything then)."""
    clock = time.monotonic()
    now = now or timezone.now()
    report = ReconcileReport(game=game.slug, full=full)
    report.skipped = _busy(game)
    if report.skipped:
        return report
    seasons = [s for s in seasons_of(game=game) if s.frozen_at is None]
    scan = _Scan()
    if full:
        _scan_full(game=game, seasons=seasons, now=now, scan=scan, report=report)
    else:
        _scan_sample(
            game=game, seasons=seasons, now=now, size=sample, rng=rng or random.Random(), scan=scan, report=report
        )
    report.candidates = sum(len(keys) for keys in scan.candidates.values())
    drift = _confirm(game=game, seasons=seasons, scan=scan, report=report)
    report.drift = len(drift)
    report.drifted_players = len({d.player for d in drift})
    report.examples = [(d.key, d.player, d.live, d.ledger) for d in drift[:EXAMPLES]]
    if repair and drift:
        if report.drift > REBUILD_ABOVE:
            try:
                boards_rebuild(game=game, live_only=True, lock_wait_s=0)
                report.rebuilt = True
            except RebuildBusy:
                report.unrepaired = report.drifted_players
        else:
            _repair(game=game, drift=drift, scan=scan, report=report)
    _periods_add(report, periods_reconcile(game=game, now=now, repair=repair))
    _periods_add(report, leagues_reconcile(game=game, now=now, repair=repair))
    report.seconds = round(time.monotonic() - clock, 2)
    if repair:
        count(f"reconcile_drift:{game.slug}", report.drift)
    gauge_set(f"reconcile_last_drift:{game.slug}", report.drift)
    gauge_set(f"reconcile_last_run:{game.slug}", int(time.time()))
    if report.drift:
        logger.warning(
            "reconcile %s: %d board entries of %d players differed from the ledger (%s); e.g. %s",
            game.slug,
            report.drift,
            report.drifted_players,
            "rebuilt" if report.rebuilt else f"{report.repaired} boards rewritten" if repair else "not repaired",
            report.examples[:2],
        )
    else:
        logger.info("reconcile %s: no drift (%d entries compared, %.2f s)", game.slug, report.entries, report.seconds)
    return report


def _periods_add(report: ReconcileReport, periods: PeriodsReport) -> None:
    """The tournament or league periods' comparison (reconcile_periods.py, reconcile_leagues.py)
    counted into the game's report."""
    report.periods += periods.periods
    report.counters_filled += periods.filled
    report.entries += periods.entries
    report.candidates += periods.candidates
    report.pending += periods.pending
    report.moved += periods.moved
    report.drift += len(periods.drift)
    report.drifted_players += len({player for _, player, _, _ in periods.drift})
    report.repaired += periods.repaired
    report.unrepaired += periods.unrepaired
    report.examples += periods.drift[: max(0, EXAMPLES - len(report.examples))]


def _busy(game: Game) -> str:
    if epoch_get() is None:
        return "the boards marker is missing: the recovery rebuilds every game"
    if lock_taken(rebuild_lock_key(game.slug)) or client().exists(pause_key(game.slug)):
        return "a rebuild of the game is running"
    return ""


def _comparable(key: str, *, ledger_last: datetime | None, redis_ttl: int, now: datetime) -> bool:
    """Whether a board must hold exactly what the ledger says: a season board always; a periodic
    one unless it is within MARGIN_S of the end of its lifetime by the ledger's last write and by
    its TTL in Redis (-2: no such key, -1: no expiry)."""
    kind = KINDS[BoardRef.from_key(key).board]
    if not kind.ttl_s():
        return True
    left = kind.ttl_left_s(ledger_last, now) if ledger_last is not None else None
    if left is not None and left > MARGIN_S:
        return True
    return redis_ttl == -1 or redis_ttl > MARGIN_S


def _scan_full(*, game: Game, seasons: Sequence[Season], now: datetime, scan: _Scan, report: ReconcileReport) -> None:
    """Every board of every live season compared with the ledger (`full`), one kind of one season
    at a time (what the module docstring says of memory)."""
    redis = boards_client()
    for season in seasons:
        in_redis = [
            str(k)
            for k in redis.scan_iter(match=season_pattern(game.slug, season.id), count=1000)
            if is_board_key(str(k))
        ]
        extras = ledger_has_extra_boards(game=game, season_id=season.id)
        for kind in KINDS.values():
            known, last, found = _ledger_compared(
                redis, game=game, season=season, kind=kind, extras=extras, now=now, report=report
            )
            boards = sorted(set(known) | {k for k in in_redis if BoardRef.from_key(k).board == kind.name})
            comparable = _ghosts_found(
                redis, boards=boards, known=known, last=last, found=found, now=now, scan=scan, report=report
            )
            for key, player, live_score, ledger_score in found:
                if key in comparable:
                    scan.add(key, player, live_score, ledger_score)


_Found = tuple[str, str, int | None, int | None]  # board key, player, live score, ledger score


def _ledger_compared(
    redis: Any,
    *,
    game: Game,
    season: Season,
    kind: BoardKind,
    extras: bool,
    now: datetime,
    report: ReconcileReport,
) -> tuple[dict[str, set[str]], dict[str, int], list[_Found]]:
    """The ledger's entries of one kind of one season, streamed, each chunk compared with the
    boards (one ZMSCORE per board and chunk, pipelined). Returns the ledger's members of each board,
    each board's last write (epoch microseconds) and the entries that differ."""
    known: dict[str, set[str]] = defaultdict(set)  # the ledger's members of each board
    last: dict[str, int] = {}
    found: list[_Found] = []
    refs: dict[tuple[str, int, str, str, int], str] = {}
    with ledger_entries(game=game, kinds=[kind], season_id=season.id, live_at=now, extras=extras) as chunks:
        for rows in chunks:
            by_key: dict[str, list[tuple[str, int]]] = defaultdict(list)
            for board, season_id, region, period, player, score, last_us in rows:
                shard = shard_of(player, season.board_shards)
                key = refs.get((board, season_id, region, period, shard))
                if key is None:
                    key = refs[(board, season_id, region, period, shard)] = (
                        BoardRef(game.slug, season_id, board, region, period)
                        .for_player(player, season.board_shards)
                        .key
                    )
                by_key[key].append((player, score))
                if last_us > last.get(key, 0):
                    last[key] = last_us
            pipe = redis.pipeline(transaction=False)
            for key, members in by_key.items():
                pipe.zmscore(key, [player for player, _ in members])
            for (key, members), scores in zip(by_key.items(), pipe.execute(), strict=True):
                seen = known[key]
                for (player, want), live in zip(members, scores, strict=True):
                    seen.add(player)
                    got = None if live is None else int(live)
                    if got != want:
                        found.append((key, player, got, want))
                report.entries += len(members)
    return known, last, found


def _ghosts_found(
    redis: Any,
    *,
    boards: list[str],
    known: dict[str, set[str]],
    last: dict[str, int],
    found: list[_Found],
    now: datetime,
    scan: _Scan,
    report: ReconcileReport,
) -> set[str]:
    """Of `boards` (the ledger's and Redis's), those comparable now (`_comparable`: TTL and size in
    one pipeline); on each that holds more members than the ledger has, the others (ghosts) are
    added to `found` (ZSCAN). Returns the comparable boards."""
    pipe = redis.pipeline(transaction=False)
    for key in boards:
        pipe.ttl(key)
        pipe.zcard(key)
    replies = pipe.execute()
    comparable: set[str] = set()
    for i, key in enumerate(boards):
        ttl, size = int(replies[2 * i]), int(replies[2 * i + 1])
        ledger_last = moment_of(last[key]) if key in last else None
        if not _comparable(key, ledger_last=ledger_last, redis_ttl=ttl, now=now):
            continue
        comparable.add(key)
        report.boards += 1
        if ledger_last is not None:
            scan.board_last[key] = ledger_last
        ledger_members = known.get(key, set())
        if size > len(ledger_members):  # members the ledger lacks (or has only since it was read)
            for member, score in redis.zscan_iter(key, count=1000):
                if str(member) not in ledger_members:
                    found.append((key, str(member), int(score), None))
                    report.entries += 1
    return comparable


def _scan_sample(
    *,
    game: Game,
    seasons: Sequence[Season],
    now: datetime,
    size: int,
    rng: random.Random,
    scan: _Scan,
    report: ReconcileReport,
) -> None:
    redis = boards_client()
    players = sampled_players(game=game, size=size, rng=rng)
    drawn: set[str] = set()  # boards members were drawn from: ghosts on them are found too
    pipe = redis.pipeline(transaction=False)
    for season in seasons:
        for kind in (ALL, BEST):
            shards = BoardRef(game.slug, season.id, kind.name, GLOBAL).shards(season.board_shards)
            for ref in shards:
                drawn.add(ref.key)
                pipe.zrandmember(ref.key, max(1, size // 2 // len(shards)))
    for members in pipe.execute():
        players.update(str(m) for m in members or [])
    report.players = len(players)
    if not players:
        return
    expected: dict[str, BoardScores] = {}
    for season in seasons:
        expected.update(ledger_boards(game=game, player_ids=players, season_id=season.id))
    boards = sorted(set(expected) | drawn)
    ttls = _pipelined([("ttl", key) for key in boards])
    wanted = [
        key
        for key, ttl in zip(boards, ttls, strict=True)
        if _comparable(
            key, ledger_last=expected[key].last_write if key in expected else None, redis_ttl=int(ttl), now=now
        )
    ]
    order = sorted(players)
    pipe = redis.pipeline(transaction=False)
    for key in wanted:
        pipe.zmscore(key, order)
    for key, scores in zip(wanted, pipe.execute(), strict=True):
        board = expected.get(key)
        report.boards += 1
        if board is not None and KINDS[board.ref.board].periodic:
            scan.board_last[key] = board.last_write
        for player, live in zip(order, scores, strict=True):
            want = board.scores.get(player) if board is not None else None
            got = None if live is None else int(live)
            if got is None and want is None:
                continue
            report.entries += 1
            if got != want:
                scan.add(key, player, got, want)


def sampled_players(*, game: Game, size: int, rng: random.Random) -> set[str]:
    """Up to `size` players of the game, drawn by probing random primary keys of the players
    table (one index lookup each: the plan cannot turn into a scan), a few rounds at most."""
    table = Player._meta.db_table
    bounds = Player.objects.order_by("id").values_list("id", flat=True)
    low, high = bounds.first(), bounds.reverse().first()
    found: set[str] = set()
    if low is None or high is None or size <= 0:
        return found
    span = high - low + 1
    for _ in range(SAMPLE_ROUNDS):
        probes = rng.sample(range(low, high + 1), min(size, span))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT p.player_id FROM unnest(%s::bigint[]) AS i(id) "
                f"CROSS JOIN LATERAL (SELECT player_id, game_id FROM {table} WHERE id = i.id) AS p "
                f"WHERE p.game_id = %s",
                [probes, game.id],
            )
            found.update(row[0] for row in cursor.fetchall())
        if len(found) >= size or span <= size:
            break
    return set(rng.sample(sorted(found), size)) if len(found) > size else found


def _pipelined(commands: Iterable[tuple[str, str]]) -> list[Any]:
    pipe = boards_client().pipeline(transaction=False)
    for name, key in commands:
        getattr(pipe, name)(key)
    return list(pipe.execute())


@dataclass(frozen=True)
class _Fingerprint:
    """A player's results as the ledger holds them (id, status, still unapplied) and their
    visibility: equal before and after a comparison means nothing moved in between."""

    results: frozenset[tuple[int, str, bool]]
    hidden: bool

    @property
    def pending(self) -> bool:
        return any(status == EventStatus.ACCEPTED and unapplied for _, status, unapplied in self.results)


def _fingerprints(*, game: Game, seasons: Sequence[Season], players: list[str]) -> dict[str, _Fingerprint]:
    results: dict[str, set[tuple[int, str, bool]]] = defaultdict(set)
    # "unapplied": the event's outbox row (its id), None once applied.
    for player, event_id, status, outbox_row in ScoreEvent.objects.filter(
        season_id__in=[s.id for s in seasons], player_id__in=players, played_at__range=played_window(seasons)
    ).values_list("player_id", "id", "status", "unapplied"):
        results[player].add((event_id, status, outbox_row is not None))
    hidden = {
        player
        for player, is_hidden, deleted_at in Player.objects.filter(game=game, player_id__in=players).values_list(
            "player_id", "hidden", "deleted_at"
        )
        if is_hidden or deleted_at is not None
    }
    return {p: _Fingerprint(frozenset(results.get(p, ())), p in hidden) for p in players}


def _confirm(*, game: Game, seasons: Sequence[Season], scan: _Scan, report: ReconcileReport) -> list[Drift]:
    """Look again at each player that differed: the ledger and the boards read afresh between two
    fingerprints of the player's results. Stops once more than REBUILD_ABOVE are confirmed (the
    game is rebuilt then)."""
    drift: list[Drift] = []
    redis = boards_client()
    players = sorted(scan.candidates)
    for start in range(0, len(players), CONFIRM_BATCH):
        if len(drift) > REBUILD_ABOVE:
            break
        batch = players[start : start + CONFIRM_BATCH]
        before = _fingerprints(game=game, seasons=seasons, players=batch)
        steady = []
        for player in batch:
            if before[player].pending:
                report.pending += len(scan.candidates[player])
            else:
                steady.append(player)
        if not steady:
            continue
        expected: dict[str, BoardScores] = {}
        for season_id in {BoardRef.from_key(k).season_id for p in steady for k in scan.candidates[p]}:
            expected.update(ledger_boards(game=game, player_ids=steady, season_id=season_id))
        by_key: dict[str, list[str]] = defaultdict(list)
        for player in steady:
            for key in scan.candidates[player]:
                by_key[key].append(player)
        pipe = redis.pipeline(transaction=False)
        for key, members in by_key.items():
            pipe.zmscore(key, members)
        live: dict[tuple[str, str], int | None] = {}
        for (key, members), scores in zip(by_key.items(), pipe.execute(), strict=True):
            for player, score in zip(members, scores, strict=True):
                live[(key, player)] = None if score is None else int(score)
        after = _fingerprints(game=game, seasons=seasons, players=steady)
        for player in steady:
            if after[player] != before[player]:
                report.moved += len(scan.candidates[player])
                continue
            for key in sorted(scan.candidates[player]):
                board = expected.get(key)
                want = board.scores.get(player) if board is not None else None
                if live[(key, player)] != want:
                    drift.append(Drift(key, player, live[(key, player)], want))
    return drift


def _repair(*, game: Game, drift: list[Drift], scan: _Scan, report: ReconcileReport) -> None:
    by_player: dict[str, list[str]] = defaultdict(list)
    for d in drift:
        by_player[d.player].append(d.key)
    for player, keys in by_player.items():
        try:
            report.repaired += player_boards_rewrite(
                game=game, player_id=player, board_keys=keys, board_last=scan.board_last
            )
        except (GamePaused, OperationalError):  # a rebuild's swap, or the player changed: next run
            report.unrepaired += 1
