"""Rebuilding a game's boards in place: staged copies, a short pause, one swap.

A rebuild (scoring/rebuild.py holds the ledger's side) writes every board's new content under
`<key>:rebuild` while the live boards keep updating (`board_stage`), pauses the game's applies
(`game_paused`: the apply script answers "paused" and the caller retries), patches the staged
copies with what moved meanwhile (`board_stage_patch`), then renames every staged key over its live
key in one MULTI (`boards_swap`). Display names and the hidden set are rebuilt from the players
table (`names_rebuild`, `hidden_rebuild`).
"""

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime

from django.db.models import Q
from redis.client import Pipeline

from common.redis import client
from seasons.models import Game

from . import keys
from .codec import ScoreCodec
from .models import Friendship, Player
from .tally import BoardScores

PAUSE_TTL_S = 120
WRITE_CHUNK = 5000

Progress = Callable[[int], None]


def _distinct(board: BoardScores, codec: ScoreCodec) -> dict[str, int]:
    points = {codec.points(score) for score in board.scores.values()}
    return {str(p): p for p in points}


def board_stage(
    pipe: Pipeline, board: BoardScores, *, dense: bool, codec: ScoreCodec, now: datetime, progress: Progress | None
) -> None:
    """Queue on `pipe` the writes of a board's staged copy (and its dense companion)."""
    key = board.ref.key + keys.REBUILD_SUFFIX
    companion = keys.distinct_key(key)
    pipe.delete(key, companion)
    items = list(board.scores.items())
    for start in range(0, len(items), WRITE_CHUNK):
        pipe.zadd(key, dict(items[start : start + WRITE_CHUNK]))
        if progress:
            progress(min(WRITE_CHUNK, len(items) - start))
    if dense and items:
        pipe.zadd(companion, _distinct(board, codec))
    ttl = board.ttl_left_s(now)
    if ttl is not None:
        pipe.expire(key, max(ttl, 1))
        if dense:
            pipe.expire(companion, max(ttl, 1))


def board_stage_patch(
    *,
    staged: dict[str, BoardScores],
    fresh: dict[str, BoardScores],
    players: set[str],
    dense: bool,
    codec_of: Callable[[BoardScores], ScoreCodec],
    now: datetime,
) -> None:
    """Bring the staged copies up to date for `players`, whose entries `fresh` holds as they are
    now: drop those gone, write the new ones, redo the dense companions of the boards touched.
    `staged` is updated in place (it is what the swap installs)."""
    pipe = client().pipeline(transaction=False)
    for key, board in staged.items():
        for player in players:
            if player in board.scores and (key not in fresh or player not in fresh[key].scores):
                pipe.zrem(key + keys.REBUILD_SUFFIX, player)
                del board.scores[player]
    for key, board in fresh.items():
        if key not in staged:
            staged[key] = BoardScores(ref=board.ref, scores={}, last_write=board.last_write)
        target = staged[key]
        target.scores.update(board.scores)
        target.last_write = max(target.last_write, board.last_write)
        if board.scores:
            pipe.zadd(key + keys.REBUILD_SUFFIX, board.scores)
        ttl = target.ttl_left_s(now)
        if ttl is not None:
            pipe.expire(key + keys.REBUILD_SUFFIX, max(ttl, 1))
    if dense:
        for key in fresh:
            companion = keys.distinct_key(key + keys.REBUILD_SUFFIX)
            pipe.delete(companion)
            distinct = _distinct(staged[key], codec_of(staged[key]))
            if distinct:
                pipe.zadd(companion, distinct)
    pipe.execute()


@contextmanager
def game_paused(game: str, reason: str) -> Iterator[None]:
    """The game's applies and corrections wait (they answer "paused") until the block ends; the
    flag expires by itself if the process dies."""
    redis = client()
    redis.set(keys.pause_key(game), reason, ex=PAUSE_TTL_S)
    try:
        yield
    finally:
        redis.delete(keys.pause_key(game))


def boards_swap(*, game: str, board_keys: set[str], dense: bool) -> int:
    """Rename every staged key over its live key (one MULTI); drop live boards not in `board_keys`.
    Returns the number of live boards dropped. The old values are unlinked (freed in the
    background), so a 1M-member board does not block Redis."""
    redis = client()
    scanned = {str(k) for k in redis.scan_iter(match=keys.board_pattern(game), count=1000)}
    # Live boards and their dense companions (not staged copies, leftovers or versions).
    existing = {k for k in scanned if keys.is_board_key(k) or (k.endswith(":d") and keys.is_board_key(k[:-2]))}
    pipe = redis.pipeline(transaction=True)
    old_keys = []
    for key in board_keys:
        for name in [key, keys.distinct_key(key)] if dense else [key]:
            if name in existing:
                pipe.rename(name, name + keys.OLD_SUFFIX)
                old_keys.append(name + keys.OLD_SUFFIX)
    for key in board_keys:
        pipe.rename(key + keys.REBUILD_SUFFIX, key)
        if dense:
            pipe.rename(keys.distinct_key(key + keys.REBUILD_SUFFIX), keys.distinct_key(key))
    stale = [k for k in existing if k not in board_keys and not (k.endswith(":d") and k[:-2] in board_keys)]
    versions_renew(pipe, [*board_keys, *(k for k in stale if keys.is_board_key(k))])
    pipe.execute()
    garbage = old_keys + stale
    if garbage:
        redis.unlink(*garbage)
    return len(stale)


def versions_renew(pipe: Pipeline, board_keys: Iterable[str]) -> None:
    """Queue new versions for boards whose content is replaced wholesale (a swap): Redis's clock in
    microseconds, above every version the boards had (those started at the clock of their birth
    and went up by one per change). Cached answers of the old content are then never served."""
    seconds, micros = client().time()
    version = str(int(seconds) * 1_000_000 + int(micros))
    for key in board_keys:
        pipe.set(keys.version_key(key), version)


def names_rebuild(*, game: Game) -> None:
    """The game's display names from the players table into Redis."""
    names = Player.objects.filter(game=game, display_name__isnull=False).values_list("player_id", "display_name")
    redis = client()
    batch: dict[str, str] = {}
    for player_id, name in names.iterator(chunk_size=10_000):
        batch[player_id] = name or ""
        if len(batch) >= WRITE_CHUNK:
            redis.hset(keys.names_key(game.slug), mapping=batch)  # type: ignore[arg-type]
            batch = {}
    if batch:
        redis.hset(keys.names_key(game.slug), mapping=batch)  # type: ignore[arg-type]
    redis.incr(keys.names_version_key(game.slug))


def friends_rebuild(*, game: Game) -> None:
    """Every player's friends set from the friendships table into Redis (stale sets go)."""
    redis = client()
    sets: dict[str, set[str]] = {}
    for a, b in Friendship.objects.filter(game=game).values_list("player_a", "player_b").iterator(chunk_size=10_000):
        sets.setdefault(a, set()).add(b)
        sets.setdefault(b, set()).add(a)
    stale = [str(k) for k in redis.scan_iter(match=keys.friends_key(game.slug, "*"), count=1000)]
    pipe = redis.pipeline(transaction=False)
    if stale:
        pipe.delete(*stale)
    for player_id, friends in sets.items():
        pipe.sadd(keys.friends_key(game.slug, player_id), *friends)
    pipe.execute()


def hidden_rebuild(*, game: Game) -> None:
    """The game's hidden and deleted players from the players table into Redis."""
    hidden = list(
        Player.objects.filter(game=game)
        .filter(Q(hidden=True) | Q(deleted_at__isnull=False))
        .values_list("player_id", flat=True)
    )
    pipe = client().pipeline(transaction=True)
    pipe.delete(keys.hidden_key(game.slug))
    if hidden:
        pipe.sadd(keys.hidden_key(game.slug), *hidden)
    pipe.execute()
