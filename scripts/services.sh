#!/usr/bin/env bash
# Make PostgreSQL and Redis reachable for the project.
#
#   scripts/services.sh         reuse running servers, or start the project's own under var/
#   scripts/services.sh stop    stop only the servers this script started under var/
#
# Reads DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/leaderboard)
# and REDIS_URL (default redis://127.0.0.1:6379/0). Safe to run repeatedly. With REDIS_SENTINEL set
# (a Sentinel-managed Redis: make run-ha, scripts/ha.sh) it starts no Redis. A multi-host
# DATABASE_URL (a failover formation, scripts/pg_ha.sh url) is only checked, never started here.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VAR="$ROOT/var"
DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/leaderboard}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
PG_OS_USER=postgres

say() { echo "services: $*" >&2; }
die() { echo "services: error: $*" >&2; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# ---------------------------------------------------------------- helpers
APT_UPDATED=0
apt_install() {
    local sudo=()
    if ! is_root; then
        command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to apt-get install $*"
        sudo=(sudo)
    fi
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; please install $* yourself"
    say "installing $* with apt-get ..."
    if [ "$APT_UPDATED" -eq 0 ]; then
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
        APT_UPDATED=1
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

is_local_host() {
    case "$1" in
        127.0.0.1 | localhost | ::1 | "") return 0 ;;
        *) return 1 ;;
    esac
}

tcp_open() { timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null; }

# Parse DATABASE_URL / REDIS_URL into shell variables.
parse_urls() {
    eval "$(python3 - "$DATABASE_URL" "$REDIS_URL" <<'PY'
import shlex, sys
from urllib.parse import urlsplit, urlunsplit, unquote

db, rd = urlsplit(sys.argv[1]), urlsplit(sys.argv[2])
servers = db.netloc.rpartition("@")[2]
multi = "," in servers  # a failover formation's nodes: libpq reads the URL itself
out = {
    "PG_MULTI": "1" if multi else "",
    "PG_SERVERS": servers,
    "PG_ADMIN_URL": urlunsplit(db._replace(path="/postgres")),
    "PG_HOST": "" if multi else db.hostname or "127.0.0.1",
    "PG_PORT": "" if multi else str(db.port or 5432),
    "PG_USER": unquote(db.username or "postgres"),
    "PG_PASS": unquote(db.password or ""),
    "PG_DB": unquote(db.path.lstrip("/")) or "leaderboard",
    "REDIS_HOST": rd.hostname or "127.0.0.1",
    "REDIS_PORT": str(rd.port or 6379),
    "REDIS_PASS": unquote(rd.password or ""),
}
for k, v in out.items():
    print(f"{k}={shlex.quote(v)}")
PY
)"
}

# ---------------------------------------------------------------- redis
redis_ping() {
    # Prints the server's answer (PONG, NOAUTH..., LOADING...) or nothing.
    if command -v redis-cli >/dev/null 2>&1; then
        REDISCLI_AUTH="$REDIS_PASS" timeout 3 redis-cli --no-auth-warning \
            -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null || true
    elif tcp_open "$REDIS_HOST" "$REDIS_PORT"; then
        echo PONG
    fi
}

redis_reachable() { redis_ping | grep -qE 'PONG|NOAUTH|WRONGPASS|LOADING|DENIED'; }

ensure_redis() {
    # The test suite starts its own private redis-server, so the binary must exist.
    if ! command -v redis-server >/dev/null 2>&1; then
        apt_install redis-server
    fi

    if [ -n "${REDIS_SENTINEL:-}" ]; then
        say "redis: the primary the sentinels at $REDIS_SENTINEL name (not starting one)"
        return
    fi
    if redis_reachable; then
        say "redis found running at $REDIS_HOST:$REDIS_PORT"
        return
    fi
    is_local_host "$REDIS_HOST" \
        || die "redis at $REDIS_HOST:$REDIS_PORT is not reachable (remote host, not starting one)"

    mkdir -p "$VAR/redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" \
        --dir "$VAR/redis" --maxmemory-policy noeviction --appendonly yes \
        --logfile "$VAR/redis/redis.log" --pidfile "$VAR/redis/redis.pid" >/dev/null 9>&-
    local i
    for i in $(seq 1 100); do
        if redis_ping | grep -q PONG; then
            say "redis started at 127.0.0.1:$REDIS_PORT (var/redis)"
            return
        fi
        sleep 0.1
    done
    die "redis did not come up on port $REDIS_PORT; see $VAR/redis/redis.log"
}

stop_redis() {
    local pidfile="$VAR/redis/redis.pid" pid
    if [ ! -f "$pidfile" ]; then
        say "redis: nothing started under var/"
        return
    fi
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null \
        && grep -q redis-server "/proc/$pid/comm" 2>/dev/null; then
        kill -TERM "$pid" # redis shuts down gracefully on SIGTERM
        local i
        for i in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && die "redis (pid $pid) did not stop"
        say "redis stopped (pid $pid)"
    else
        say "redis: not running (stale pidfile)"
    fi
    rm -f "$pidfile"
}

# ---------------------------------------------------------------- postgres
pg_bindir() {
    # Newest Debian-style bin dir with the client tools (initdb comes with the server package).
    local d
    d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [ -n "$d" ] && [ -x "$d/pg_isready" ]; then
        echo "$d"
    elif command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(readlink -f "$(command -v pg_ctl)")"
    fi
}

# Run a command as the OS user owning the cluster (postgres refuses to run as root).
as_pg() {
    if is_root; then
        (cd / && runuser -u "$PG_OS_USER" -- "$@")
    else
        "$@"
    fi
}

# Where our own cluster lives. Normally var/postgres; if the postgres OS user
# cannot traverse the project path (e.g. a checkout under /root), fall back to
# a directory it can reach and remember that choice in var/postgres.location.
pg_datadir() {
    if [ -f "$VAR/postgres.location" ]; then
        cat "$VAR/postgres.location"
    elif ! is_root || as_pg test -x "$VAR" 2>/dev/null; then
        echo "$VAR/postgres"
    else
        echo "/var/tmp/leaderboard-pg-$(echo "$ROOT" | md5sum | cut -c1-10)/postgres"
    fi
}

pg_ready() { "$PGBIN/pg_isready" -q -h "$PG_HOST" -p "$PG_PORT" >/dev/null 2>&1; }

# A multi-host DATABASE_URL names a failover formation (scripts/pg_ha.sh): it is reached as it is,
# through libpq (the node that takes writes), and no PostgreSQL of our own is started for it.
ensure_formation() {
    PGBIN="$(pg_bindir)"
    if [ -z "$PGBIN" ]; then
        apt_install postgresql-client
        PGBIN="$(pg_bindir)"
        [ -n "$PGBIN" ] || die "postgres client tools not found after installing postgresql-client"
    fi
    export PGPASSWORD="$PG_PASS" PGCONNECT_TIMEOUT=3
    local primary
    primary="$("$PGBIN/psql" -X -qAt -d "$PG_ADMIN_URL" -c \
        "select coalesce(host(inet_server_addr()), 'local') || ':' || current_setting('port')" 2>/dev/null)" \
        || die "no node of the formation at $PG_SERVERS takes writes (is it started? scripts/pg_ha.sh status); not starting a PostgreSQL of our own for a multi-host DATABASE_URL"
    say "postgres formation reachable at $PG_SERVERS (primary now: $primary); starting none of our own"
    local exists
    exists="$("$PGBIN/psql" -X -qAt -d "$PG_ADMIN_URL" -c "select 1 from pg_database where datname='${PG_DB//\'/\'\'}'")" \
        || die "cannot query the formation at $PG_SERVERS"
    if [ "$exists" != 1 ]; then
        "$PGBIN/psql" -X -q -d "$PG_ADMIN_URL" -c "create database \"${PG_DB//\"/\"\"}\"" \
            || die "cannot create database '$PG_DB' on the formation"
        say "postgres database '$PG_DB' created on the formation's primary"
    fi
}

ensure_postgres() {
    if [ -n "$PG_MULTI" ]; then
        ensure_formation
        return
    fi
    PGBIN="$(pg_bindir)"
    if [ -n "$PGBIN" ] && pg_ready; then
        say "postgres found running at $PG_HOST:$PG_PORT"
    elif [ -z "$PGBIN" ] && tcp_open "$PG_HOST" "$PG_PORT"; then
        # Something listens there but we have no client tools yet.
        apt_install postgresql-client
        PGBIN="$(pg_bindir)"
        [ -n "$PGBIN" ] || die "postgres client tools not found after installing postgresql-client"
        say "postgres found running at $PG_HOST:$PG_PORT"
    else
        is_local_host "$PG_HOST" \
            || die "postgres at $PG_HOST:$PG_PORT is not reachable (remote host, not starting one)"
        start_own_postgres
    fi
    ensure_database
}

start_own_postgres() {
    if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
        apt_install postgresql
        PGBIN="$(pg_bindir)"
        [ -n "$PGBIN" ] && [ -x "$PGBIN/initdb" ] || die "initdb still not found after installing postgresql"
        # Debian's package may have started its own cluster on the wanted port.
        if pg_ready; then
            say "postgres found running at $PG_HOST:$PG_PORT (Debian's cluster)"
            return
        fi
    fi
    if is_root; then
        id "$PG_OS_USER" >/dev/null 2>&1 || apt_install postgresql
    else
        PG_OS_USER="$(id -un)"
    fi

    local data log
    data="$(pg_datadir)"
    log="$(dirname "$data")/postgres.log"
    mkdir -p "$VAR" "$data"
    if [ "$data" != "$VAR/postgres" ]; then
        echo "$data" >"$VAR/postgres.location"
        say "note: $VAR is not reachable by user $PG_OS_USER; cluster lives in $data"
    fi
    chmod 700 "$data"
    touch "$log"
    if is_root; then
        chown "$PG_OS_USER": "$data" "$log"
        [ "$data" = "$VAR/postgres" ] || chown "$PG_OS_USER": "$(dirname "$data")"
    fi

    if [ ! -f "$data/PG_VERSION" ]; then
        as_pg "$PGBIN/initdb" -D "$data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 \
            >"$data.initdb.log" 2>&1 \
            || { cat "$data.initdb.log" >&2; die "initdb failed"; }
        rm -f "$data.initdb.log"
    fi
    # Daemons must not inherit the lock fd 9 (it would block later runs), hence 9>&-.
    # A leftover server of ours on another port: restart it on the wanted one.
    if as_pg "$PGBIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        as_pg "$PGBIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null
    fi
    local listen="$PG_HOST"
    [ -n "$listen" ] || listen=127.0.0.1
    as_pg "$PGBIN/pg_ctl" -D "$data" -l "$log" -w -t 60 \
        -o "-p $PG_PORT -k /tmp -c listen_addresses=$listen" start >/dev/null 9>&- \
        || die "pg_ctl start failed; see $log"
    local i
    for i in $(seq 1 300); do
        if pg_ready; then
            say "postgres started at $PG_HOST:$PG_PORT (${data#"$ROOT"/})"
            if [ "$PG_USER" != postgres ]; then
                "$PGBIN/psql" -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -tAc \
                    "select 1 from pg_roles where rolname='${PG_USER//\'/\'\'}'" | grep -q 1 \
                    || "$PGBIN/createuser" -h "$PG_HOST" -p "$PG_PORT" -U postgres -s "$PG_USER"
            fi
            return
        fi
        sleep 0.1
    done
    die "postgres did not become ready on port $PG_PORT; see $log"
}

ensure_database() {
    export PGPASSWORD="$PG_PASS"
    local exists
    exists="$("$PGBIN/psql" -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -tAc \
        "select 1 from pg_database where datname='${PG_DB//\'/\'\'}'")" \
        || die "cannot connect to postgres at $PG_HOST:$PG_PORT as $PG_USER"
    if [ "$exists" != 1 ]; then
        "$PGBIN/createdb" -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" "$PG_DB"
        say "postgres database '$PG_DB' created"
    fi
}

stop_postgres() {
    local data
    if [ -f "$VAR/postgres.location" ]; then
        data="$(cat "$VAR/postgres.location")"
    else
        data="$VAR/postgres"
    fi
    if [ ! -f "$data/postmaster.pid" ]; then
        say "postgres: nothing running under ${data#"$ROOT"/}"
        return
    fi
    PGBIN="$(pg_bindir)"
    [ -n "$PGBIN" ] || die "pg_ctl not found"
    if is_root; then PG_OS_USER="$(stat -c %U "$data")"; else PG_OS_USER="$(id -un)"; fi
    as_pg "$PGBIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null \
        || die "pg_ctl stop failed for $data"
    say "postgres stopped (${data#"$ROOT"/})"
}

# ---------------------------------------------------------------- main
with_lock() {
    mkdir -p "$VAR"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$VAR/.services.lock"
        flock -w 120 9 || die "timed out waiting for another services.sh"
    fi
}

case "${1:-start}" in
    start | up | "")
        parse_urls
        with_lock
        ensure_redis
        ensure_postgres
        ;;
    stop | down)
        with_lock
        stop_redis
        stop_postgres
        ;;
    *)
        echo "usage: $0 [start|stop]" >&2
        exit 2
        ;;
esac
