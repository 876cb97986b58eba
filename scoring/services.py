"""The write path: signed matches into the ledger, in one transaction, then queued for the boards.

Every refused match stores nothing; every 2xx answer is sent only after its transaction commits.
Side effects (the apply task, display names in Redis) run on commit; the apply tasks of a process's
requests are gathered for a few ms (apply_buffer.py); the relay covers a crash between commit and
enqueue.
"""

import hashlib
import logging
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, NamedTuple

import orjson
import psycopg
import redis
from celery import current_app
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from anticheat.models import ServerKey
from anticheat.services import Rules, Verdict, results_judge, rules_for
from boards.codec import ScoreCodec
from boards.selectors import season_regions_of
from boards.services import Profile, players_register, season_regions_fix
from boards.writer import names_fill, names_store
from common.db import copy_rows, ids_take, insert_rows_returning, jsonb_binary
from common.metrics import count
from common.outage import OutageLog
from competitions.entry import Entry, tournaments_named
from competitions.models import Tournament
from seasons.models import Game, Season
from seasons.periods import week_label
from seasons.selectors import season_containing, seasons_of

from .apply_buffer import ApplyBuffer
from .entries import entries_decide_all, entries_give_back, entries_of_results, entries_record
from .league_entries import (
    PeriodsFound,
    Seat,
    league_results_record,
    league_seats_decide,
    league_seats_give_back,
    leagues_of,
    seats_of_results,
)
from .ledger_partitions import month_of, partitions_ensure, partitions_forget_local
from .models import EventStatus, MatchSubmission, ScoreEvent, SeasonTotal
from .outbox import outbox_add, outbox_drop
from .validation import Errors, MatchIn

logger = logging.getLogger(__name__)

ENQUEUE_CHUNK = 2000
# The stable name of `scoring.tasks.apply_events`, by which `enqueue_apply` sends it.
APPLY_TASK = "scoring.apply_events"


@dataclass
class MatchOutcome:
    """The answer for one match: its HTTP status and body, and whether it is a replay."""

    http_status: int
    body: dict[str, Any]
    replayed: bool = False


@dataclass
class _Pending:
    index: int
    match: MatchIn
    content_hash: str
    season: Season
    verdicts: list[Verdict] = field(default_factory=list)
    tournaments: list[Tournament] = field(default_factory=list)
    entries: list[list[Entry]] = field(default_factory=list)  # per result, one per named tournament
    seats: list[list[Seat]] = field(default_factory=list)  # per result, one per league period it counts in


def content_hash(match: MatchIn) -> str:
    return hashlib.sha256(orjson.dumps(match.canonical(), option=orjson.OPT_SORT_KEYS)).hexdigest()


def _refusal(
    status: int, code: str, detail: str, fields: Errors | None = None, match_id: str | None = None
) -> MatchOutcome:
    body: dict[str, Any] = {}
    if match_id is not None:
        body["match_id"] = match_id
    if fields:
        body.update(fields)
    body["detail"] = detail
    body["code"] = code
    return MatchOutcome(http_status=status, body=body)


def _replay_or_conflict(submission_hash: str, answer: dict[str, Any], new_hash: str, match_id: str) -> MatchOutcome:
    if submission_hash == new_hash:
        return MatchOutcome(http_status=200, body=answer, replayed=True)
    return _refusal(
        409,
        "idempotency_conflict",
        "This match id was already submitted with a different body; nothing changed.",
        match_id=match_id,
    )


def _season_for(
    match: MatchIn, seasons: list[Season], now: datetime, open_now: dict[int, bool] | None = None
) -> tuple[Season | None, MatchOutcome | None]:
    """The season a match counts for, or its refusal. `open_now`: each season's
    `accepts_results_at(now)`, worked out once for a whole batch."""
    if match.season_id is not None:
        season = next((s for s in seasons if s.id == match.season_id), None)
        if season is None:
            return None, _refusal(
                400,
                "invalid",
                "Invalid input.",
                {"season": ["Unknown season for this game."]},
                match_id=str(match.match_id),
            )
        if not season.contains(match.played_at):
            return None, _refusal(
                409, "season_closed", f"played_at is outside season {season.id}.", match_id=str(match.match_id)
            )
    else:
        season = season_containing(seasons=seasons, played_at=match.played_at)
        if season is None:
            mid = str(match.match_id)
            logger.info("season_closed: match %s played at %s falls in no season", mid, match.played_at)
            count(f"refused:season_closed:{seasons[0].game.slug if seasons else '-'}")
            return None, _refusal(409, "season_closed", "played_at falls in no open season.", match_id=mid)
    if not (open_now[season.id] if open_now is not None else season.accepts_results_at(now)):
        mid = str(match.match_id)
        logger.info("season_closed: match %s for season %s after its grace", mid, season.id)
        count(f"refused:season_closed:{season.game.slug}")
        return None, _refusal(
            409, "season_closed", f"Season {season.id} is closed (its grace window has ended).", match_id=mid
        )
    return season, None


class _ClaimLost(Exception):
    pass


CLAIM_ATTEMPTS = 3


def matches_submit(
    *,
    game: Game,
    key: ServerKey,
    matches: list[tuple[uuid.UUID, MatchIn | None, Errors]],
    now: datetime,
    rules: Rules | None = None,
) -> list[MatchOutcome]:
    """Judge and store a list of matches (the single endpoint passes one), one answer per match.

    Locks, in this order (`_store`): player and season-region rows in player id order; the unique
    (game, match_id) submission rows in match id order, so a concurrent copy of a match waits for
    the first to commit, then rolls back and replays it (the whole list is answered again, up to
    CLAIM_ATTEMPTS times); the season totals last, in player id order. Side effects after the
    transaction: the apply task for accepted events (on commit), new display names in Redis.
    """
    for attempt in range(1, CLAIM_ATTEMPTS + 1):
        try:
            return _submit_once(game=game, key=key, matches=matches, now=now, rules=rules or rules_for(game=game))
        except _ClaimLost:
            # A concurrent copy of one of these matches committed first: start over, and the
            # lookup of earlier submissions answers those matches as replays (or conflicts).
            if attempt == CLAIM_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _submit_once(
    *,
    game: Game,
    key: ServerKey,
    matches: list[tuple[uuid.UUID, MatchIn | None, Errors]],
    now: datetime,
    rules: Rules,
) -> list[MatchOutcome]:
    outcomes: list[MatchOutcome | None] = [None] * len(matches)
    for i, (match_id, parsed, errors) in enumerate(matches):
        if parsed is None:
            outcomes[i] = _refusal(400, "invalid", "Invalid input.", errors, match_id=str(match_id))
    valid = [(i, m) for i, (_, m, _) in enumerate(matches) if m is not None]
    if not valid:
        return [o for o in outcomes if o is not None]

    seasons = seasons_of(game=game)
    open_now = {season.id: season.accepts_results_at(now) for season in seasons}
    hashes = {i: content_hash(m) for i, m in valid}
    earlier = _earlier_submissions(game, [(m.match_id, month_of(m.played_at)) for _, m in valid])
    first_in_batch: dict[uuid.UUID, int] = {}
    pending = _pending_of(
        game=game,
        valid=valid,
        earlier=earlier,
        hashes=hashes,
        outcomes=outcomes,
        first_in_batch=first_in_batch,
        seasons=seasons,
        open_now=open_now,
        now=now,
    )
    if pending:
        try:
            accepted_ids, new_names = _store(
                game=game, key=key, pending=pending, outcomes=outcomes, now=now, rules=rules
            )
        except BaseException:  # the transaction did not commit: the tournaments' counters go back
            entries_give_back([e for p in pending for per_result in p.entries for e in per_result])
            league_seats_give_back([s for p in pending for per_result in p.seats for s in per_result])
            raise
        if accepted_ids:
            transaction.on_commit(lambda: apply_soon(accepted_ids), robust=True)
        if new_names:  # after the transaction: readers find the name with the player's first result
            _names_store(game=game, names=new_names)

    for i, match in valid:
        if outcomes[i] is None:  # a repeat of a match id earlier in the same batch
            first = first_in_batch[match.match_id]
            first_outcome = outcomes[first]
            assert first_outcome is not None
            if first_outcome.http_status == 202:
                outcomes[i] = _replay_or_conflict(hashes[first], first_outcome.body, hashes[i], str(match.match_id))
            else:
                outcomes[i] = first_outcome
    return [o for o in outcomes if o is not None]


def _pending_of(
    *,
    game: Game,
    valid: list[tuple[int, MatchIn]],
    earlier: dict[uuid.UUID, tuple[str, dict[str, Any]]],
    hashes: dict[int, str],
    outcomes: list[MatchOutcome | None],
    first_in_batch: dict[uuid.UUID, int],
    seasons: list[Season],
    open_now: dict[int, bool],
    now: datetime,
) -> list[_Pending]:
    """The matches to store, each with its season and the tournaments it names; replays,
    conflicts and refusals (an unknown tournament, a closed season) answered into `outcomes`."""
    pending: list[_Pending] = []
    named = tournaments_named(game_id=game.id, slugs={t for _, m in valid for t in m.tournaments})
    for i, match in valid:
        mid = str(match.match_id)
        if match.match_id in earlier:
            first_hash, first_answer = earlier[match.match_id]
            outcomes[i] = _replay_or_conflict(first_hash, first_answer, hashes[i], mid)
            continue
        if match.match_id in first_in_batch:
            continue  # answered below, once the first copy has its answer
        first_in_batch[match.match_id] = i
        unknown = [t for t in match.tournaments if t not in named]
        if unknown:
            fields = {"tournaments": [f"The game has no tournament {', '.join(map(repr, unknown))}."]}
            outcomes[i] = _refusal(400, "invalid", "Invalid input.", fields, match_id=mid)
            continue
        season, refusal = _season_for(match, seasons, now, open_now)
        if refusal is not None:
            outcomes[i] = refusal
            continue
        assert season is not None
        tournaments = [named[t] for t in match.tournaments]
        pending.append(_Pending(index=i, match=match, content_hash=hashes[i], season=season, tournaments=tournaments))
    return pending


def _earlier_submissions(
    game: Game, matches: list[tuple[uuid.UUID, date]]
) -> dict[uuid.UUID, tuple[str, dict[str, Any]]]:
    """The first submission of each (match id, month of play) already stored: (content hash,
    answer). Read from those months' claim partitions only (the months are constants of the
    statement: the planner leaves the others out), one index probe a match."""
    wanted = list(dict.fromkeys(matches))
    if not wanted:
        return {}
    months = sorted({month for _, month in wanted})
    # Keys travel as comma-joined strings: quoting a 500-element array parameter client-side costs
    # more than the lookup itself (common/db.py, rows_by_keys).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT found.match_id, found.content_hash, found.answer "
            "FROM unnest(string_to_array(%s, ',')::uuid[], string_to_array(%s, ',')::date[]) AS k(m, month) "
            f"CROSS JOIN LATERAL (SELECT t.match_id, t.content_hash, t.answer FROM {MatchSubmission._meta.db_table} t "
            "WHERE t.game_id = %s AND t.played_month = ANY(%s::date[]) AND t.match_id = k.m "
            "AND t.played_month = k.month LIMIT 1) AS found",
            [
                ",".join(str(m) for m, _ in wanted),
                ",".join(month.isoformat() for _, month in wanted),
                game.id,
                months,
            ],
        )
        rows = cursor.fetchall()
    return {
        match_id: (content, orjson.loads(answer) if isinstance(answer, str) else answer)
        for match_id, content, answer in rows
    }


_NO_EXTRA_BOARDS = jsonb_binary([])


class EventInsert(NamedTuple):
    """One ledger row as the submission inserts it (columns by name, in one statement)."""

    game_id: int
    season_id: int
    match_id: uuid.UUID
    player_id: str
    points: int
    played_at: datetime
    duration_s: int
    day: date
    week: str
    region: str | None
    status: str
    reason: str
    accepted_at: datetime
    extra_boards: bytes  # a JSON list, as `jsonb_binary` writes it
    requested_region: str | None


@transaction.atomic
def _store(
    *,
    game: Game,
    key: ServerKey,
    pending: list[_Pending],
    outcomes: list[MatchOutcome | None],
    now: datetime,
    rules: Rules,
) -> tuple[list[int], dict[str, str]]:
    """The batch's matches into the ledger, in one transaction, in four steps: 1. judge the results;
    2. register the players and the region each result counts in; 3. each match's answer, then the
    match ids claimed with it, then the events; 4. the season totals. Row locks in that order:
    players and season regions (player id order), the submissions (match id order), the season
    totals last (player id order), all held until the commit. Fills `outcomes` (202 each); returns
    the ids of the accepted events (for the apply task) and the new display names (for Redis).
    The tournaments a match names get each result's verdict right after the judge (their counters
    in Redis; `matches_submit` gives them back if this transaction fails)."""
    _results_judge(game=game, rules=rules, pending=pending, now=now)
    _tournament_verdicts(pending=pending, now=now)
    _league_seats(game=game, pending=pending, now=now)
    players, new_names, created = players_register(
        game=game, profiles=[(r.player_id, r.display_name, r.region) for p in pending for r in p.match.results]
    )
    regions_by_season = _regions_counted(pending=pending, players=players, created=created)
    rows, answers = _events_and_answers(
        game=game, pending=pending, players=players, regions_by_season=regions_by_season, outcomes=outcomes, now=now
    )
    partitions_ensure({month_of(p.match.played_at) for p in pending})  # a late result of a month without one
    _claim_submissions(game=game, key=key, pending=pending, answers=answers)
    event_ids = _events_insert(rows)
    _tournament_results_insert(pending=pending, event_ids=event_ids, now=now)
    _league_results_insert(pending=pending, event_ids=event_ids, now=now)
    accepted = _season_totals_last(game=game, pending=pending, rows=rows, event_ids=event_ids, outcomes=outcomes)
    return accepted, new_names


def _results_judge(*, game: Game, rules: Rules, pending: list[_Pending], now: datetime) -> None:
    """Step 1: judge every result of the batch at once (the anti-cheat seam); each match gets its
    verdicts, in result order."""
    verdicts = iter(
        results_judge(
            game=game,
            rules=rules,
            results=[(r.player_id, r.points, p.match.duration_s) for p in pending for r in p.match.results],
            now=now,
        )
    )
    for p in pending:
        p.verdicts = [next(verdicts) for _ in p.match.results]


def _tournament_verdicts(*, pending: list[_Pending], now: datetime) -> None:
    """Each result of a match that names tournaments: its entries and their verdicts."""
    entries: list[Entry] = []
    for p in pending:
        if p.tournaments:
            results = (
                (r.player_id, v.status == EventStatus.ACCEPTED)
                for r, v in zip(p.match.results, p.verdicts, strict=True)
            )
            p.entries = entries_of_results(results=results, played_at=p.match.played_at, tournaments=p.tournaments)
            entries += [e for per_result in p.entries for e in per_result]
    entries_decide_all(entries=entries, now=now)


def _tournament_results_insert(*, pending: list[_Pending], event_ids: list[int], now: datetime) -> None:
    """The verdicts into the ledger beside the events (`event_ids`: the batch's, in result order)."""
    rows: list[tuple[int, Entry]] = []
    ids = iter(event_ids)
    for p in pending:
        for j in range(len(p.match.results)):
            event_id = next(ids)
            if p.entries:
                rows += [(event_id, e) for e in p.entries[j]]
    entries_record(rows=rows, now=now)


def _league_seats(*, game: Game, pending: list[_Pending], now: datetime) -> None:
    """Leagues (a hook of their own): each accepted result played in an open period of one of the
    game's leagues gets its cohort (a first result of the period seats the player, in Lua)."""
    leagues = leagues_of(game_id=game.id)
    if not leagues:
        return
    seats: list[Seat] = []
    found = PeriodsFound()
    for p in pending:
        results = (
            (r.player_id, v.status == EventStatus.ACCEPTED) for r, v in zip(p.match.results, p.verdicts, strict=True)
        )
        p.seats = seats_of_results(leagues=leagues, results=results, played_at=p.match.played_at, now=now, found=found)
        seats += [s for per_result in p.seats for s in per_result]
    league_seats_decide(seats=seats)


def _league_results_insert(*, pending: list[_Pending], event_ids: list[int], now: datetime) -> None:
    """Leagues: each result's cohort into the ledger beside the events (`event_ids` in result order)."""
    rows: list[tuple[int, Seat]] = []
    ids = iter(event_ids)
    for p in pending:
        for j in range(len(p.match.results)):
            event_id = next(ids)
            if p.seats:
                rows += [(event_id, s) for s in p.seats[j]]
    league_results_record(rows=rows, now=now)


def _regions_counted(
    *, pending: list[_Pending], players: dict[str, Profile], created: set[str]
) -> dict[int, dict[str, str]]:
    """Step 2 (after the players are registered): per season, the region each player's results
    count in. An accepted result fixes a player's season region if none is fixed yet (locks the
    rows `season_regions_fix` writes); the others are only looked up."""
    regions_by_season: dict[int, dict[str, str]] = {}
    by_season: dict[int, list[_Pending]] = defaultdict(list)
    for p in pending:
        by_season[p.season.id].append(p)
    for season_id, group in by_season.items():
        season = group[0].season
        candidates: dict[str, str | None] = {}
        others: set[str] = set()
        for p in group:
            for r, v in zip(p.match.results, p.verdicts, strict=True):
                if v.status == EventStatus.ACCEPTED:
                    candidates.setdefault(r.player_id, r.region or players[r.player_id][1])
                else:
                    others.add(r.player_id)
        fixed = season_regions_fix(season=season, candidates=candidates, unfixed=created)
        rest = others - fixed.keys()
        if rest:
            fixed.update(season_regions_of(season=season, player_ids=rest))
        regions_by_season[season_id] = fixed
    return regions_by_season


def _events_and_answers(
    *,
    game: Game,
    pending: list[_Pending],
    players: dict[str, Profile],
    regions_by_season: dict[int, dict[str, str]],
    outcomes: list[MatchOutcome | None],
    now: datetime,
) -> tuple[list[EventInsert], dict[uuid.UUID, dict[str, Any]]]:
    """Step 3, in memory: each result's ledger row, and each match's answer (also its outcome,
    202). One pass over the results."""
    rows: list[EventInsert] = []
    answers: dict[uuid.UUID, dict[str, Any]] = {}
    periods: dict[datetime, tuple[date, str]] = {}  # the day and ISO week of each played_at
    for p in pending:
        match = p.match
        played_at = match.played_at
        period = periods.get(played_at)
        if period is None:
            period = periods[played_at] = (played_at.date(), week_label(played_at))
        day, week = period
        fixed = regions_by_season[p.season.id]
        results = []
        for j, (r, v) in enumerate(zip(match.results, p.verdicts, strict=True)):
            counted = fixed.get(r.player_id) or r.region or players[r.player_id][1]
            rows.append(
                EventInsert(
                    game.id,
                    p.season.id,
                    match.match_id,
                    r.player_id,
                    r.points,
                    played_at,
                    match.duration_s,
                    day,
                    week,
                    counted,
                    v.status,
                    v.reason,
                    now,
                    jsonb_binary(list(r.extra_boards)) if r.extra_boards else _NO_EXTRA_BOARDS,
                    r.region if r.region and r.region != counted else None,
                )
            )
            results.append(_result_answer(r.player_id, v, p.entries[j] if p.entries else None))
        answers[match.match_id] = {"match_id": str(match.match_id), "results": results}
        outcomes[p.index] = MatchOutcome(http_status=202, body=answers[match.match_id])
    return rows, answers


def _events_insert(rows: list[EventInsert]) -> list[int]:
    """Step 3, once the match ids are claimed: the events, by COPY with ids from their own sequence
    (nothing can conflict: the match ids are this transaction's), and the accepted ones into the
    outbox (one INSERT), where they stay until the worker has applied them. Returns their ids, in
    row order."""
    event_ids = ids_take(ScoreEvent._meta.db_table, len(rows))
    copy_rows(
        ScoreEvent._meta.db_table,
        ["id", *EventInsert._fields],
        ([event_id, *row] for event_id, row in zip(event_ids, rows, strict=True)),
        binary=True,
    )
    if rows:  # one accept time for the whole batch (`now`)
        accepted = [
            (event_id, row.played_at)
            for event_id, row in zip(event_ids, rows, strict=True)
            if row.status == EventStatus.ACCEPTED
        ]
        outbox_add(accepted, accepted_at=rows[0].accepted_at)
    return event_ids


def _season_totals_last(
    *,
    game: Game,
    pending: list[_Pending],
    rows: list[EventInsert],
    event_ids: list[int],
    outcomes: list[MatchOutcome | None],
) -> list[int]:
    """Step 4: the season totals last, as their row locks are held only until the commit that
    follows. Events that would take a total past its capacity become `score_overflow` (their
    answers too); returns the ids of the events still accepted."""
    inserted = [(event_id, row.status) for event_id, row in zip(event_ids, rows, strict=True)]
    overflowed = _season_totals_add(pending, event_ids)
    if overflowed:
        _mark_overflow(game=game, pending=pending, overflowed=overflowed, outcomes=outcomes)
    return [event_id for event_id, status in inserted if status == EventStatus.ACCEPTED and event_id not in overflowed]


def _names_store(*, game: Game, names: dict[str, str]) -> None:
    """New display names into the board index. The results are stored already: a Redis that fails
    here never costs the answer; the names are written again once it is back (`_PendingNames`)."""
    try:
        names_store(game=game.slug, names=names)
    except redis.RedisError as exc:
        _pending_names.hold(game.slug, names, exc)


class _PendingNames:
    """Display names Redis refused (down), written again every second until it takes them, and
    only for players who still have none there (`names_fill`). At most `max_names` are kept (the
    rest come back with the next rebuild)."""

    def __init__(self, max_names: int = 100_000) -> None:
        self.max_names = max_names
        self._lock = threading.Lock()
        self._names: dict[str, dict[str, str]] = {}
        self._count = 0
        self._thread: threading.Thread | None = None
        self._outage = OutageLog(logger, "Redis (display names)", "new players' names are written once it is back")

    def hold(self, game: str, names: dict[str, str], exc: Exception) -> None:
        self._outage.failed(exc)
        with self._lock:
            self._merge(game, names)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pending-names", daemon=True)
                self._thread.start()

    def _merge(self, game: str, names: dict[str, str]) -> None:
        held = self._names.setdefault(game, {})
        for player_id, name in names.items():
            if player_id not in held and self._count < self.max_names:
                held[player_id] = name
                self._count += 1

    def _run(self) -> None:
        while True:
            time.sleep(1.0)
            with self._lock:
                taken, self._names, self._count = self._names, {}, 0
            failed: redis.RedisError | None = None
            for game, names in taken.items():
                if failed is None:
                    try:
                        names_fill(game=game, names=names)
                        continue
                    except redis.RedisError as exc:
                        failed = exc
                with self._lock:
                    self._merge(game, names)
            if failed is not None:
                self._outage.failed(failed)
                continue
            self._outage.succeeded()
            with self._lock:
                if not self._names:
                    self._thread = None
                    return


_pending_names = _PendingNames()


def _result_answer(player_id: str, verdict: Verdict, entries: list[Entry] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"player_id": player_id, "status": verdict.status}
    if verdict.reason:
        answer["reason"] = verdict.reason
    if entries is not None:
        answer["tournaments"] = {e.tournament.slug: e.verdict for e in entries}
    return answer


# A unique violation names the partition's own index (named by PostgreSQL after its columns); the
# claims' only other unique index, the primary key, takes ids from a sequence.
SUBMISSION_UNIQUE_COLUMNS = "_game_id_match_id_played_month_"


def _claim_submissions(
    *, game: Game, key: ServerKey, pending: list[_Pending], answers: dict[uuid.UUID, dict[str, Any]]
) -> None:
    """The match ids, claimed by this transaction with their answers (COPY), or `_ClaimLost` when
    a concurrent copy of one of them committed first (the whole list is then answered again).

    Rows go in match id order, so two batches sharing match ids wait on each other, never deadlock.
    COPY rather than INSERT ... ON CONFLICT: the conflict is rare (the same match sent twice at the
    same moment), and COPY parses no JSON of rows (measured for 500 matches: 17.4 ms by
    `json_to_recordset`, ~8 ms by COPY).
    """
    now = timezone.now()
    ordered = sorted(pending, key=lambda p: p.match.match_id)
    try:
        copy_rows(
            MatchSubmission._meta.db_table,
            ["game_id", "match_id", "played_month", "content_hash", "key_id", "answer", "created_at"],
            (
                (game.id, mid, month_of(p.match.played_at), p.content_hash, key.key_id, jsonb_binary(answers[mid]), now)
                for p in ordered
                for mid in (p.match.match_id,)
            ),
            binary=True,
        )
    except IntegrityError as exc:
        cause = exc.__cause__
        if isinstance(cause, psycopg.errors.CheckViolation) and "no partition" in str(cause):
            # A month this process thought it had was archived since: known again from the catalog
            # on the next attempt, which creates it (a late result of a reopened month).
            partitions_forget_local()
            raise _ClaimLost from exc
        if not isinstance(cause, psycopg.errors.UniqueViolation) or SUBMISSION_UNIQUE_COLUMNS not in str(
            cause.diag.constraint_name
        ):
            raise
        raise _ClaimLost from exc


def _season_totals_add(pending: list[_Pending], event_ids: list[int]) -> set[int]:
    """Add accepted points to the players' season totals; return the ids of events that would take
    a total past the season's exact capacity (to be rejected as `score_overflow`, never rounded).

    One upsert per season for the whole batch, rows in player id order (the lock order).
    `event_ids` are the batch's events in result order.
    """
    by_season: dict[int, list[_Pending]] = defaultdict(list)
    for p in pending:
        by_season[p.season.id].append(p)
    event_of: dict[tuple[uuid.UUID, str], int] = {}
    ids = iter(event_ids)
    for p in pending:
        for r in p.match.results:
            event_of[(p.match.match_id, r.player_id)] = next(ids)
    overflowed: set[int] = set()
    for season_id, group in by_season.items():
        if group[0].season.game.ascending:
            continue  # lower-is-better boards keep single values: no season total to cap
        capacity = ScoreCodec(group[0].season.time_bits).max_points
        added: dict[str, int] = defaultdict(int)
        for p in group:
            for r, v in zip(p.match.results, p.verdicts, strict=True):
                if v.status == EventStatus.ACCEPTED:
                    added[r.player_id] += r.points
        if not added:
            continue
        players = sorted(added)
        table = SeasonTotal._meta.db_table
        # Only the totals past the capacity come back (almost never any).
        totals = dict(
            insert_rows_returning(
                table,
                [("season_id", "bigint"), ("player_id", "text"), ("points", "bigint")],
                [(season_id, pid, added[pid]) for pid in players],
                order_by="player_id",
                on_conflict=(
                    f"ON CONFLICT (season_id, player_id) DO UPDATE SET points = {table}.points + EXCLUDED.points"
                ),
                returning="player_id, points",
                where=f"points > {int(capacity)}",
            )
        )
        for pid in sorted(pid for pid, total in totals.items() if total > capacity):
            running = totals[pid] - added[pid]
            for p in group:
                for j, r in enumerate(p.match.results):
                    if r.player_id != pid or p.verdicts[j].status != EventStatus.ACCEPTED:
                        continue
                    if running + r.points > capacity:
                        p.verdicts[j] = Verdict(EventStatus.REJECTED, "score_overflow")
                        overflowed.add(event_of[(p.match.match_id, pid)])
                    else:
                        running += r.points
            SeasonTotal.objects.filter(season_id=season_id, player_id=pid).update(points=running)
    return overflowed


def _mark_overflow(
    *, game: Game, pending: list[_Pending], overflowed: set[int], outcomes: list[MatchOutcome | None]
) -> None:
    """The rare path: events past the capacity become `rejected` (and leave the outbox) before the
    answer is sent."""
    ScoreEvent.objects.filter(id__in=overflowed).update(status=EventStatus.REJECTED, reason="score_overflow")
    outbox_drop(sorted(overflowed))
    for p in pending:
        if not any(v.reason == "score_overflow" for v in p.verdicts):
            continue
        results = [
            _result_answer(r.player_id, v, p.entries[j] if p.entries else None)
            for j, (r, v) in enumerate(zip(p.match.results, p.verdicts, strict=True))
        ]
        answer = {"match_id": str(p.match.match_id), "results": results}
        MatchSubmission.objects.filter(
            game=game, match_id=p.match.match_id, played_month=month_of(p.match.played_at)
        ).update(answer=answer)
        outcomes[p.index] = MatchOutcome(http_status=202, body=answer)


def enqueue_apply(event_ids: list[int]) -> None:
    """Queue accepted events for the board writer, in chunks (never one task per event). The task
    is sent by its stable name: the tasks module imports this one (and moderation, which imports
    this one), so importing it here would close a circle. `send_task` takes the registered task's
    options as `apply_async` does; `ignore_result` is passed as the task sets it."""
    for start in range(0, len(event_ids), ENQUEUE_CHUNK):
        current_app.send_task(
            APPLY_TASK, args=(event_ids[start : start + ENQUEUE_CHUNK],), retry=False, ignore_result=True
        )


_apply_buffer = ApplyBuffer(linger_s=settings.SCORING_ENQUEUE_LINGER_MS / 1000, chunk=ENQUEUE_CHUNK, send=enqueue_apply)


def apply_soon(event_ids: list[int]) -> None:
    """Queue accepted events with those other requests of this process commit in the next few ms
    (apply_buffer.py): one task for many requests."""
    _apply_buffer.add(event_ids)


def apply_flush() -> None:
    """Send what this process has gathered for the apply queue now."""
    _apply_buffer.flush()
