#!/usr/bin/env bash
# High availability for development (make run-ha): a PostgreSQL formation of pg_auto_failover (a
# monitor, a primary and a synchronous secondary, ports 5440-5442, under var/pg-ha/: scripts/pg_ha.sh)
# and a Redis primary, one replica and three Redis Sentinels (quorum 2) on 127.0.0.1, ports
# HA_PORT_BASE..+4 (default 6390: primary 6390, replica 6391, sentinels 6392-6394), data
# (append-only files) and logs under var/redis-ha/.
#
#   scripts/ha.sh start    start what is not running yet (the sentinels remember earlier failovers)
#   scripts/ha.sh status   each process's role; exit 0 only when the sentinels name a primary
#   scripts/ha.sh stop     stop them (the data stays in var/redis-ha/; rm -r it for a fresh start)
#
# start and status print DATABASE_URL=... (both hosts, target_session_attrs=read-write),
# REDIS_SENTINEL=... and REDIS_SENTINEL_MASTER=... on stdout (for `export $(scripts/ha.sh start)`);
# messages go to stderr. The Redis part is common/redis_sentinel.py (python -m
# common.redis_sentinel), which the tests use as well. HA_POSTGRES=0 leaves PostgreSQL out (the
# single server scripts/services.sh provides).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VAR="$ROOT/var"
DIR="$VAR/redis-ha"
HA_PORT_BASE="${HA_PORT_BASE:-6390}"

die() { echo "ha: error: $*" >&2; exit 1; }

python_bin() {
    if [ -x "$ROOT/.venv/bin/python" ]; then
        echo "$ROOT/.venv/bin/python"
    else
        command -v python3 || die "python3 not found"
    fi
}

with_lock() {
    mkdir -p "$VAR"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$VAR/.ha.lock"
        flock -w 120 9 || die "timed out waiting for another ha.sh"
    fi
}

redis_ha() {
    # The servers must not inherit the lock (fd 9): Python's subprocess closes it for them.
    (cd "$ROOT" && "$(python_bin)" -m common.redis_sentinel "$1" --dir "$DIR" --port-base "$HA_PORT_BASE")
}

case "${1:-}" in
    start | up)
        case "$HA_PORT_BASE" in
            '' | *[!0-9]*) die "HA_PORT_BASE must be a port number, not '$HA_PORT_BASE'" ;;
        esac
        command -v redis-server >/dev/null 2>&1 || bash "$ROOT/scripts/services.sh" >/dev/null # installs it
        with_lock
        if [ "${HA_POSTGRES:-1}" != 0 ]; then
            url="$(bash "$ROOT/scripts/pg_ha.sh" start 9>&-)" || die "the PostgreSQL formation did not start"
            echo "DATABASE_URL=$url"
        fi
        redis_ha start
        ;;
    stop | down)
        with_lock
        redis_ha stop
        [ "${HA_POSTGRES:-1}" = 0 ] || bash "$ROOT/scripts/pg_ha.sh" stop 9>&-
        ;;
    status)
        if [ "${HA_POSTGRES:-1}" != 0 ]; then
            bash "$ROOT/scripts/pg_ha.sh" status >&2
            echo "DATABASE_URL=$(bash "$ROOT/scripts/pg_ha.sh" url)"
        fi
        redis_ha status
        ;;
    *)
        echo "usage: $0 start|stop|status   (env HA_PORT_BASE, default 6390)" >&2
        exit 2
        ;;
esac
