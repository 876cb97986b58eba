"""Typed readers for settings from the environment; a bad value fails loudly at start-up."""

import hashlib
import os
import re
from urllib.parse import unquote, urlparse

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/leaderboard"


class ConfigError(ValueError):
    pass


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from exc


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


def database_from_url(url: str) -> dict[str, object]:
    """`postgresql://user:password@host:port/name` as a Django DATABASES entry (psycopg 3)."""
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql"}:
        raise ConfigError(f"DATABASE_URL must be a postgresql:// URL, got {url!r}")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "leaderboard",
        "USER": unquote(parsed.username or "postgres"),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": parsed.hostname or "127.0.0.1",
        "PORT": str(parsed.port or 5432),
    }


def deployment_prefix(database_url: str) -> str:
    """The default first part of every Redis key: named after the deployment's database, so that two
    deployments on one Redis (staging beside production, a test run beside a demo) never share a
    key. `lb-{database name}-{6 hex of host:port/name}`, e.g. `lb-leaderboard-9a0c3e`; no colon,
    which separates the parts of a key."""
    db = database_from_url(database_url)
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(db["NAME"]))[:40]
    where = f"{db['HOST']}:{db['PORT']}/{db['NAME']}"
    return f"lb-{name}-{hashlib.sha256(where.encode()).hexdigest()[:6]}"


def key_prefix_from_env() -> str:
    """REDIS_KEY_PREFIX, or the prefix named after DATABASE_URL's database (scripts and benchmarks
    outside Django ask this too: `python -c` in scripts/bench.sh)."""
    return env_str("REDIS_KEY_PREFIX", "") or deployment_prefix(env_str("DATABASE_URL", DEFAULT_DATABASE_URL))


def sentinels_from_env(name: str) -> list[tuple[str, int]]:
    """A `host:port,host:port` list of Redis Sentinels (empty when unset); a bad entry fails at start."""
    sentinels = []
    for entry in env_list(name, []):
        host, _, port = entry.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"{name} must be a host:port list, got {entry!r}")
        sentinels.append((host.strip("[]"), int(port)))
    return sentinels


def sentinel_url(sentinels: list[tuple[str, int]], redis_url: str) -> str:
    """The sentinels as one URL in kombu's form, `sentinel://h1:p1/DB;sentinel://h2:p2/DB`, with the
    database number and the password of `redis_url` (the primary's: `sentinel://:PW@h1:p1/DB;...`).
    Celery's broker reads it as it is; common/redis.py and boards/fastpath.py read it back with
    `common.redis.sentinels_of`."""
    parsed = urlparse(redis_url)
    path = parsed.path.lstrip("/")
    db = int(path) if path.isdigit() else 0
    auth = f":{parsed.password}@" if parsed.password else ""  # still quoted as in REDIS_URL
    return ";".join(f"sentinel://{auth}{host}:{port}/{db}" for host, port in sentinels)


def sentinel_primary_auth(url: str) -> dict[str, str]:
    """`{"password": ...}` of the primary, from a `sentinel://:PW@h:p/DB;...` URL (none: empty)."""
    password = urlparse(url.split(";")[0]).password
    return {"password": unquote(password)} if password else {}
