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
    """`postgresql://user:password@host:port/name?param=value` as a Django DATABASES entry
    (psycopg 3), read by libpq's own parser: so a multi-host URL of a failover formation,
    `postgresql://u@h1:p1,h2:p2/name?target_session_attrs=read-write`, gives HOST "h1,h2" and PORT
    "p1,p2", which Django hands to libpq as they are (it tries each host in turn, keeping the first
    that takes writes). The query's parameters (target_session_attrs, connect_timeout, sslmode...)
    are libpq's, under OPTIONS; one libpq does not know fails here, at start-up."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    scheme, sep, _ = url.partition("://")
    if not sep or scheme not in {"postgres", "postgresql"}:
        raise ConfigError(f"DATABASE_URL must be a postgresql:// URL, got {url!r}")
    try:
        params = {key: str(value) for key, value in conninfo_to_dict(url).items()}
    except ProgrammingError as exc:
        raise ConfigError(f"DATABASE_URL is not a URL libpq accepts: {exc}") from exc
    hosts = (params.pop("host", "") or "127.0.0.1").split(",")
    ports = params.pop("port", "").split(",")
    if len(ports) == 1:  # one port (or none) for every host, as libpq reads it
        ports = ports * len(hosts)
    if len(ports) != len(hosts):
        raise ConfigError(f"DATABASE_URL names {len(hosts)} hosts but {len(ports)} ports: {url!r}")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": params.pop("dbname", "") or "leaderboard",
        "USER": params.pop("user", "") or "postgres",
        "PASSWORD": params.pop("password", ""),
        "HOST": ",".join(host or "127.0.0.1" for host in hosts),
        "PORT": ",".join(port or "5432" for port in ports),
        "OPTIONS": params,
    }


def database_servers(database: dict[str, object]) -> list[str]:
    """The `host:port` of each server a DATABASES entry names (one, or each node of a formation)."""
    hosts, ports = str(database["HOST"]).split(","), str(database["PORT"]).split(",")
    return [f"{host}:{port}" for host, port in zip(hosts, ports, strict=True)]


def deployment_prefix(database_url: str) -> str:
    """The default first part of every Redis key: named after the deployment's database, so that two
    deployments on one Redis (staging beside production, a test run beside a demo) never share a
    key. `lb-{database name}-{6 hex of host:port/name}`, e.g. `lb-leaderboard-9a0c3e`; no colon,
    which separates the parts of a key. A formation's multi-host URL names every node: the hash is
    of all of them, sorted, so it is the same whichever node is primary and in whatever order the
    URL lists them (a failover must not move the boards to other keys)."""
    db = database_from_url(database_url)
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(db["NAME"]))[:40]
    servers = sorted(server.lower() for server in database_servers(db))
    where = f"{','.join(servers)}/{db['NAME']}"
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
