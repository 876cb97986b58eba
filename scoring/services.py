"""The write path: signed matches into the ledger, in one transaction, then queued for the boards.

Every refused match stores nothing; every 2xx answer is sent only after its transaction commits.
Side effects (the apply task, display names in Redis) run on commit; the relay covers a crash
between commit and enqueue.
"""

import hashlib
import json
import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Sum

from anticheat.models import ServerKey
from anticheat.services import Verdict, results_judge
from boards.services import players_register, season_regions_fix, season_regions_of
from seasons.models import Game, Season
from seasons.periods import week_label
from seasons.selectors import season_containing, seasons_of

from . import redis_boards
from .encoding import ScoreCodec, reached_seconds
from .models import EventStatus, MatchSubmission, ScoreEvent
from .validation import Errors, MatchIn

logger = logging.getLogger(__name__)

ENQUEUE_CHUNK = 2000


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


def content_hash(match: MatchIn) -> str:
    canonical = json.dumps(match.canonical(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _refusal(status: int, code: str, detail: str, fields: Errors | None = None, match_id: str | None = None):
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


def _season_for(match: MatchIn, seasons: list[Season], now: datetime) -> tuple[Season | None, MatchOutcome | None]:
    mid = str(match.match_id)
    if match.season_id is not None:
        season = next((s for s in seasons if s.id == match.season_id), None)
        if season is None:
            return None, _refusal(
                400, "invalid", "Invalid input.", {"season": ["Unknown season for this game."]}, match_id=mid
            )
        if not season.contains(match.played_at):
            return None, _refusal(409, "season_closed", f"played_at is outside season {season.id}.", match_id=mid)
    else:
        season = season_containing(seasons=seasons, played_at=match.played_at)
        if season is None:
            return None, _refusal(409, "season_closed", "played_at falls in no open season.", match_id=mid)
    if not season.accepts_results_at(now):
        return None, _refusal(
            409, "season_closed", f"Season {season.id} is closed (its grace window has ended).", match_id=mid
        )
    return season, None


def matches_submit(
    *, game: Game, key: ServerKey, matches: list[tuple[uuid.UUID, MatchIn | None, Errors]], now: datetime
) -> list[MatchOutcome]:
    """Judge and store a list of matches (the single endpoint passes one), one answer per match.

    Locks: inserts unique (game, match_id) submission rows, so concurrent copies of one match
    wait for the first and then replay it; player and season-region rows are written in player
    id order. Side effects on commit: the apply task for accepted events, new display names.
    """
    outcomes: list[MatchOutcome | None] = [None] * len(matches)
    for i, (match_id, parsed, errors) in enumerate(matches):
        if parsed is None:
            outcomes[i] = _refusal(400, "invalid", "Invalid input.", errors, match_id=str(match_id))
    valid = [(i, m) for i, (_, m, _) in enumerate(matches) if m is not None]
    if not valid:
        return [o for o in outcomes if o is not None]

    seasons = seasons_of(game=game)
    hashes = {i: content_hash(m) for i, m in valid}
    earlier = {
        s.match_id: s
        for s in MatchSubmission.objects.filter(game=game, match_id__in=[m.match_id for _, m in valid]).only(
            "match_id", "content_hash", "answer"
        )
    }
    pending: list[_Pending] = []
    first_in_batch: dict[uuid.UUID, int] = {}
    for i, match in valid:
        mid = str(match.match_id)
        if match.match_id in earlier:
            sub = earlier[match.match_id]
            outcomes[i] = _replay_or_conflict(sub.content_hash, sub.answer, hashes[i], mid)
            continue
        if match.match_id in first_in_batch:
            continue  # answered below, once the first copy has its answer
        first_in_batch[match.match_id] = i
        season, refusal = _season_for(match, seasons, now)
        if refusal is not None:
            outcomes[i] = refusal
            continue
        assert season is not None
        pending.append(_Pending(index=i, match=match, content_hash=hashes[i], season=season))

    if pending:
        accepted_ids = _store(game=game, key=key, pending=pending, outcomes=outcomes, now=now)
        if accepted_ids:
            transaction.on_commit(lambda: enqueue_apply(accepted_ids), robust=True)

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


@transaction.atomic
def _store(
    *, game: Game, key: ServerKey, pending: list[_Pending], outcomes: list[MatchOutcome | None], now: datetime
) -> list[int]:
    # 1. Claim the match ids. A concurrent copy blocks here until the first commits, then replays.
    claimed = _claim_submissions(game=game, key=key, pending=pending)
    lost = [p for p in pending if p.match.match_id not in claimed]
    if lost:
        winners = {
            s.match_id: s
            for s in MatchSubmission.objects.filter(game=game, match_id__in=[p.match.match_id for p in lost])
        }
        for p in lost:
            sub = winners[p.match.match_id]
            outcomes[p.index] = _replay_or_conflict(sub.content_hash, sub.answer, p.content_hash, str(p.match.match_id))
    pending = [p for p in pending if p.match.match_id in claimed]
    if not pending:
        return []

    # 2. Judge every result (anti-cheat seam), then refuse season totals past the exact capacity.
    for p in pending:
        p.verdicts = results_judge(
            game=game,
            player_ids=[r.player_id for r in p.match.results],
            points=[r.points for r in p.match.results],
            duration_s=p.match.duration_s,
        )
    _refuse_overflow(pending)

    # 3. Players and the region each accepted result counts in.
    players, new_names = players_register(
        game=game, profiles=[(r.player_id, r.display_name, r.region) for p in pending for r in p.match.results]
    )
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
                    candidates.setdefault(r.player_id, r.region or players[r.player_id].region)
                else:
                    others.add(r.player_id)
        fixed = season_regions_fix(season=season, candidates=candidates)
        rest = others - fixed.keys()
        if rest:
            fixed.update(season_regions_of(season=season, player_ids=rest))
        regions_by_season[season_id] = fixed

    # 4. The events, and each match's answer.
    events: list[ScoreEvent] = []
    answers: dict[uuid.UUID, dict[str, Any]] = {}
    for p in pending:
        match = p.match
        day = match.played_at.date()
        week = week_label(match.played_at)
        fixed = regions_by_season[p.season.id]
        rows = []
        for r, v in zip(match.results, p.verdicts, strict=True):
            region = fixed.get(r.player_id) or r.region or players[r.player_id].region
            events.append(
                ScoreEvent(
                    game=game,
                    season=p.season,
                    match_id=match.match_id,
                    player_id=r.player_id,
                    points=r.points,
                    played_at=match.played_at,
                    accepted_at=now,
                    duration_s=match.duration_s,
                    day=day,
                    week=week,
                    region=region,
                    status=v.status,
                    reason=v.reason,
                )
            )
            row = {"player_id": r.player_id, "status": v.status}
            if v.reason:
                row["reason"] = v.reason
            rows.append(row)
        answers[match.match_id] = {"match_id": str(match.match_id), "results": rows}
        outcomes[p.index] = MatchOutcome(http_status=202, body=answers[match.match_id])
    ScoreEvent.objects.bulk_create(events, batch_size=5000)
    _save_answers(game=game, answers=answers)
    if new_names:
        transaction.on_commit(lambda: _names_index(game=game.slug, names=new_names), robust=True)
    return [e.id for e in events if e.status == EventStatus.ACCEPTED]


def _claim_submissions(*, game: Game, key: ServerKey, pending: list[_Pending]) -> set[uuid.UUID]:
    """INSERT ... ON CONFLICT DO NOTHING RETURNING: the match ids this transaction owns."""
    rows = sorted(((p.match.match_id, p.content_hash) for p in pending), key=lambda row: row[0])
    table = MatchSubmission._meta.db_table
    claimed: set[uuid.UUID] = set()
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 1000):
            chunk = rows[start : start + 1000]
            values = ",".join(["(%s, %s, %s, %s, '{}'::jsonb, now())"] * len(chunk))
            params: list[Any] = []
            for match_id, digest in chunk:
                params += [game.id, match_id, digest, key.key_id]
            cursor.execute(
                f"INSERT INTO {table} (game_id, match_id, content_hash, key_id, answer, created_at) "
                f"VALUES {values} ON CONFLICT (game_id, match_id) DO NOTHING RETURNING match_id",
                params,
            )
            claimed.update(row[0] for row in cursor.fetchall())
    return claimed


def _save_answers(*, game: Game, answers: dict[uuid.UUID, dict[str, Any]]) -> None:
    table = MatchSubmission._meta.db_table
    items = list(answers.items())
    with connection.cursor() as cursor:
        for start in range(0, len(items), 1000):
            chunk = items[start : start + 1000]
            values = ",".join(["(%s::uuid, %s::jsonb)"] * len(chunk))
            params: list[Any] = []
            for match_id, answer in chunk:
                params += [match_id, json.dumps(answer)]
            cursor.execute(
                f"UPDATE {table} AS s SET answer = v.answer FROM (VALUES {values}) AS v(match_id, answer) "
                "WHERE s.game_id = %s AND s.match_id = v.match_id",
                [*params, game.id],
            )


def _refuse_overflow(pending: list[_Pending]) -> None:
    """A season total past the season's exact capacity is rejected (`score_overflow`), never rounded."""
    by_season: dict[int, list[_Pending]] = defaultdict(list)
    for p in pending:
        by_season[p.season.id].append(p)
    for season_id, group in by_season.items():
        codec = ScoreCodec(group[0].season.time_bits)
        players = {r.player_id for p in group for r in p.match.results}
        totals: dict[str, int] = dict(
            ScoreEvent.objects.filter(season_id=season_id, player_id__in=players, status=EventStatus.ACCEPTED)
            .values("player_id")
            .annotate(total=Sum("points"))
            .values_list("player_id", "total")
        )
        for p in group:
            for j, r in enumerate(p.match.results):
                if p.verdicts[j].status != EventStatus.ACCEPTED:
                    continue
                total = totals.get(r.player_id, 0) + r.points
                if total > codec.max_points:
                    p.verdicts[j] = Verdict(EventStatus.REJECTED, "score_overflow")
                else:
                    totals[r.player_id] = total


def _names_index(*, game: str, names: dict[str, str]) -> None:
    redis_boards.client().hset(redis_boards.names_key(game), mapping=names)


def enqueue_apply(event_ids: list[int]) -> None:
    """Queue accepted events for the board writer, in chunks (never one task per event)."""
    from .tasks import apply_events

    for start in range(0, len(event_ids), ENQUEUE_CHUNK):
        apply_events.apply_async(args=[event_ids[start : start + ENQUEUE_CHUNK]], retry=False)


def reached_s_for(*, season: Season, accepted_at: datetime) -> int:
    return reached_seconds(season_start=season.starts_at, accepted_at=accepted_at)
