"""The game catalog of the read path: a game, its seasons and its season pointer, kept in Redis.

Board reads need a game's seasons and its pointer on every request. They take them from Redis,
not PostgreSQL: each process keeps a parsed copy of a game's catalog under its version and
compares that version with Redis's on every read (one GET, in the read's own round trip). A season
switch (end_season, rotation, a pointer change in the admin) publishes a new catalog right after
its commit, so every web process sees it on its next read, and `/seasons` and the board reads,
which read the same catalog, never disagree about the current season. With PostgreSQL down the
reads go on. When Redis has no catalog (flushed), the first reader builds it from PostgreSQL; the
season beat re-publishes any catalog that differs from the tables (a publish lost to a Redis
outage). The catalog and its version are kept under seasons/keys.py's keys.
"""

import json
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from common.redis import client

from .keys import catalog_key, catalog_version_key, games_version_key
from .models import Game, Season, SeasonPointer


@dataclass(frozen=True)
class Catalog:
    version: str
    game: Game | None
    seasons: list[Season]  # newest first
    pointer_id: int | None


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value is not None else None


def catalog_document(*, slug: str) -> dict[str, Any] | None:
    """The catalog of a game as the tables hold it (None: no such game)."""
    game = Game.objects.filter(slug=slug).first()
    if game is None:
        return None
    seasons = Season.objects.filter(game=game).order_by("-starts_at", "-id")
    pointer = SeasonPointer.objects.filter(game=game).values_list("season_id", flat=True).first()
    return {
        "game": {
            "id": game.id,
            "slug": game.slug,
            "name": game.name,
            "tie_rule": game.tie_rule,
            "max_points_per_match": game.max_points_per_match,
            "ascending": game.ascending,
            "dimensions": list(game.dimensions or []),
            "board_shards": game.board_shards,
            "tiers": game.tiers or {},
        },
        "seasons": [
            {
                "id": s.id,
                "name": s.name,
                "starts_at": _time(s.starts_at),
                "ends_at": _time(s.ends_at),
                "grace_s": s.grace_s,
                "time_bits": s.time_bits,
                "board_shards": s.board_shards,
                "frozen_at": _time(s.frozen_at),
                "archived_at": _time(s.archived_at),
                "frozen_tiers": s.frozen_tiers,
            }
            for s in seasons
        ],
        "pointer": pointer,
    }


def catalog_parse(*, version: str, document: dict[str, Any]) -> Catalog:
    """A catalog's models (unsaved instances: nothing here touches the database)."""
    g = document["game"]
    game = Game(
        id=g["id"],
        slug=g["slug"],
        name=g["name"],
        tie_rule=g["tie_rule"],
        max_points_per_match=g["max_points_per_match"],
        ascending=g["ascending"],
        dimensions=g["dimensions"],
        board_shards=g.get("board_shards", 1),
        tiers=g.get("tiers") or {},
    )
    seasons = []
    for s in document["seasons"]:
        season = Season(
            id=s["id"],
            name=s["name"],
            starts_at=datetime.fromisoformat(s["starts_at"]),
            ends_at=datetime.fromisoformat(s["ends_at"]),
            grace_s=s["grace_s"],
            time_bits=s["time_bits"],
            board_shards=s.get("board_shards", 1),
            frozen_at=_parse_time(s["frozen_at"]),
            archived_at=_parse_time(s["archived_at"]),
            frozen_tiers=s.get("frozen_tiers"),
        )
        season.game = game
        seasons.append(season)
    return Catalog(version=version, game=game, seasons=seasons, pointer_id=document["pointer"])


_local_lock = threading.Lock()
_local: dict[str, Catalog] = {}  # this process's parsed copies, by game


def catalog_remember(catalog: Catalog) -> None:
    if catalog.game is not None:
        with _local_lock:
            _local[catalog.game.slug] = catalog


def catalog_local(*, slug: str) -> Catalog | None:
    """This process's copy of a game's catalog, whatever its version."""
    return _local.get(slug)


def catalog_cached(*, slug: str, version: str | None) -> Catalog | None:
    """This process's copy of a game's catalog when it is at `version`."""
    found = _local.get(slug)
    return found if found is not None and version is not None and found.version == version else None


def catalog_publish(*, slug: str) -> Catalog:
    """Write the game's catalog, as the tables hold it now, under a new version."""
    document = catalog_document(slug=slug)
    redis = client()
    if document is None:
        pipe = redis.pipeline(transaction=True)
        pipe.delete(catalog_key(slug), catalog_version_key(slug))
        pipe.set(games_version_key(), uuid.uuid4().hex)
        pipe.execute()
        return Catalog(version="", game=None, seasons=[], pointer_id=None)
    version = uuid.uuid4().hex
    pipe = redis.pipeline(transaction=True)
    pipe.set(catalog_key(slug), json.dumps(document, separators=(",", ":")))
    pipe.set(catalog_version_key(slug), version)
    pipe.set(games_version_key(), uuid.uuid4().hex)  # the list of games may have changed too
    pipe.execute()
    catalog = catalog_parse(version=version, document=document)
    catalog_remember(catalog)
    return catalog


def catalog_publish_on_commit(*, slug: str) -> None:
    """Publish after the caller's transaction commits (at once outside one)."""
    transaction.on_commit(lambda: catalog_publish(slug=slug), robust=True)


def catalog_get(*, slug: str) -> Catalog:
    """The game's catalog as Redis holds it now (built from the tables when Redis has none)."""
    redis = client()
    raw_version = redis.get(catalog_version_key(slug))
    version = str(raw_version) if raw_version is not None else None
    found = catalog_cached(slug=slug, version=version)
    if found is not None:
        return found
    if version is not None:
        raw = redis.get(catalog_key(slug))
        if raw is not None:
            catalog = catalog_parse(version=str(version), document=json.loads(raw))
            catalog_remember(catalog)
            return catalog
    return catalog_publish(slug=slug)


def catalogs_refresh() -> int:
    """Re-publish every game's catalog that differs from the tables; returns how many."""
    redis = client()
    published = 0
    for slug in Game.objects.values_list("slug", flat=True):
        raw = redis.get(catalog_key(slug))
        if raw is None or json.loads(raw) != catalog_document(slug=slug):
            catalog_publish(slug=slug)
            published += 1
    return published


def catalog_forget_local() -> None:
    """Drop this process's parsed copies (tests)."""
    with _local_lock:
        _local.clear()


def games_version() -> str:
    """The list of games' version (made when Redis has none): read it BEFORE reading the games, so
    a page kept at it never outlives a change published after the read."""
    redis = client()
    redis.set(games_version_key(), uuid.uuid4().hex, nx=True)
    return str(redis.get(games_version_key()))
