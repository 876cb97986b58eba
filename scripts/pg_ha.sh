#!/usr/bin/env bash
# A pg_auto_failover formation on this machine: a monitor, a primary and a synchronous secondary,
# each its own data directory and port, each run by its own `pg_autoctl run` (the keeper, which
# starts and watches its PostgreSQL). When the primary dies the monitor promotes the secondary in
# seconds (the timings set below); the service follows with its multi-host DATABASE_URL
# (target_session_attrs=read-write), printed by `url`. docs/operations.md, "High availability".
#
#   scripts/pg_ha.sh start    create the formation (first time) or start it again; waits until
#                             there is a primary and a secondary in sync (bounded)
#   scripts/pg_ha.sh stop     stop the keepers and their PostgreSQL (the data stays)
#   scripts/pg_ha.sh status   the monitor's view: every node's state and its LSN
#   scripts/pg_ha.sh url      the service's DATABASE_URL: every node, read-write only
#   scripts/pg_ha.sh install  install pg_auto_failover (postgresql-15-auto-failover) when missing
#
# Environment: PG_HA_DIR (default var/pg-ha), PG_HA_MONITOR_PORT / PG_HA_PORT_1 / PG_HA_PORT_2
# (5440 / 5441 / 5442), PG_HA_DB (leaderboard). Start anew: stop, then remove PG_HA_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VAR="$ROOT/var"
MONITOR_PORT="${PG_HA_MONITOR_PORT:-5440}"
PORTS=("${PG_HA_PORT_1:-5441}" "${PG_HA_PORT_2:-5442}")
DB="${PG_HA_DB:-leaderboard}"
HOST=127.0.0.1
PG_OS_USER=postgres
PGBIN_DEFAULT=/usr/lib/postgresql/15/bin
WAIT_S="${PG_HA_WAIT_S:-120}"

# The monitor's failover timings (pgautofailover.* settings; the defaults take about 60 s):
#   a health check every second, 1 s to connect, one retry 0.5 s later; a node whose keeper has
#   not reported for 2 s and whose health check failed is failed over; its keeper is given 2 s to
#   demote it (drain) before the secondary is promoted regardless.
MONITOR_SETTINGS=(
    "pgautofailover.health_check_period=1000"
    "pgautofailover.health_check_timeout=1000"
    "pgautofailover.health_check_max_retries=1"
    "pgautofailover.health_check_retry_delay=500"
    "pgautofailover.node_considered_unhealthy_timeout=2000"
    "pgautofailover.primary_demote_timeout=2000"
)

say() { echo "pg_ha: $*" >&2; }
die() { echo "pg_ha: error: $*" >&2; exit 1; }
is_root() { [ "$(id -u)" -eq 0 ]; }

# ---------------------------------------------------------------- install
ensure_installed() {
    command -v pg_autoctl >/dev/null 2>&1 && [ -x "$PGBIN_DEFAULT/pg_ctl" ] && return
    local sudo=()
    if ! is_root; then
        command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install postgresql-15-auto-failover"
        sudo=(sudo)
    fi
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install pg_auto_failover (pg_autoctl) yourself"
    say "installing postgresql-15-auto-failover with apt-get ..."
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15-auto-failover >/dev/null
    command -v pg_autoctl >/dev/null 2>&1 || die "pg_autoctl still not found after installing"
}

# ---------------------------------------------------------------- where
# The formation's folder: var/pg-ha, or (a checkout the postgres user cannot reach, e.g. under
# /root) a folder under /var/tmp, remembered in var/pg-ha.location as services.sh does.
ha_dir() {
    if [ -n "${PG_HA_DIR:-}" ]; then
        echo "$PG_HA_DIR"
    elif [ -f "$VAR/pg-ha.location" ]; then
        cat "$VAR/pg-ha.location"
    elif ! is_root || runuser -u "$PG_OS_USER" -- test -x "$VAR" 2>/dev/null || runuser -u "$PG_OS_USER" -- test -x "$ROOT"; then
        echo "$VAR/pg-ha"
    else
        echo "/var/tmp/leaderboard-pgha-$(echo "$ROOT" | md5sum | cut -c1-10)"
    fi
}

DIR="$(ha_dir)"
NODE_NAMES=(node1 node2)

# pg_autoctl as the owner of the data, with its configuration, state and pid files in DIR (not in
# the user's home, so that formations in two folders never meet). exec: the process becomes
# pg_autoctl (setpriv changes the user in place, without a parent left waiting).
as_pg_exec() {
    local run=()
    if is_root; then
        run=(setpriv --reuid="$PG_OS_USER" --regid="$PG_OS_USER" --init-groups)
    fi
    cd /
    exec "${run[@]}" env HOME="$DIR" XDG_CONFIG_HOME="$DIR/config" XDG_DATA_HOME="$DIR/share" \
        XDG_RUNTIME_DIR="$DIR/run" PATH="$PGBIN_DEFAULT:$PATH" "$@"
}

as_pg() { (as_pg_exec "$@"); }

monitor_uri() { echo "postgres://autoctl_node@$HOST:$MONITOR_PORT/pg_auto_failover?sslmode=disable"; }

service_url() {
    echo "postgresql://postgres@$HOST:${PORTS[0]},$HOST:${PORTS[1]}/$DB?target_session_attrs=read-write&connect_timeout=2"
}

monitor_sql() {
    "$PGBIN_DEFAULT/psql" -X -qAt -F " " -h "$HOST" -p "$MONITOR_PORT" -U autoctl_node -d pg_auto_failover -c "$1" 2>/dev/null
}

# A keeper (or the monitor's) `pg_autoctl run`, in a session of its own (setsid: its process group
# holds it, its PostgreSQL and the PostgreSQL's backends), output to DIR/NAME.log, pid in NAME.pid.
run_keeper() {
    local name="$1" pid
    pid="$(cat "$DIR/$name.pid" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        say "$name: pg_autoctl already running (pid $pid)"
        return
    fi
    # 9>&-: a daemon must not inherit the lock of a caller (make's services lock).
    (
        setsid bash "$0" __as_pg pg_autoctl run --pgdata "$DIR/$name" >>"$DIR/$name.log" 2>&1 9>&- &
        echo $! >"$DIR/$name.pid"
    )
    say "$name: pg_autoctl run started (pid $(cat "$DIR/$name.pid"), log ${DIR#"$ROOT"/}/$name.log)"
}

wait_for() {
    local what="$1" check="$2" i
    for i in $(seq 1 $((WAIT_S * 2))); do
        if eval "$check"; then return 0; fi
        sleep 0.5
    done
    die "timed out after ${WAIT_S} s waiting for $what; see $DIR/*.log"
}

# Node states as the monitor has them: "name reported_state goal_state" per line.
node_states() { monitor_sql "select nodename, reportedstate, goalstate from pgautofailover.node order by nodeid" || true; }

state_of() { node_states | awk -v n="$1" '$1 == n { print $2 "/" $3 }'; }

# ---------------------------------------------------------------- start
start_monitor() {
    if [ ! -f "$DIR/monitor/PG_VERSION" ]; then
        say "creating the monitor on port $MONITOR_PORT ..."
        as_pg pg_autoctl create monitor --pgdata "$DIR/monitor" --pgport "$MONITOR_PORT" \
            --pgctl "$PGBIN_DEFAULT/pg_ctl" --hostname "$HOST" --auth trust --no-ssl \
            >>"$DIR/monitor.log" 2>&1 || die "pg_autoctl create monitor failed; see $DIR/monitor.log"
        # pg_autoctl starts the monitor's PostgreSQL on every address: loopback only.
        as_pg pg_autoctl config set --pgdata "$DIR/monitor" postgresql.listen_addresses "$HOST" >/dev/null
        # The failover timings, in the monitor's own configuration (they survive its restarts).
        local setting
        for setting in "${MONITOR_SETTINGS[@]}"; do
            echo "${setting%%=*} = ${setting#*=}" >>"$DIR/monitor/postgresql.auto.conf"
        done
    fi
    run_keeper monitor
    wait_for "the monitor on port $MONITOR_PORT" 'monitor_sql "select 1" >/dev/null'
}

start_node() {
    local index="$1" name="${NODE_NAMES[$1]}" port="${PORTS[$1]}"
    if [ ! -f "$DIR/$name/PG_VERSION" ]; then
        say "creating $name on port $port (a base backup of the primary when there is one) ..."
        # --run: create and run in one process (a secondary's creation waits for the primary to
        # accept it, which needs the keepers running).
        rm -f "$DIR/$name.pid"
        (
            setsid bash "$0" __as_pg pg_autoctl create postgres --pgdata "$DIR/$name" --pgport "$port" \
                --pgctl "$PGBIN_DEFAULT/pg_ctl" --hostname "$HOST" --listen "$HOST" --name "$name" --dbname "$DB" \
                --username postgres --monitor "$(monitor_uri)" --auth trust --no-ssl --run \
                >>"$DIR/$name.log" 2>&1 9>&- &
            echo $! >"$DIR/$name.pid"
        )
    else
        run_keeper "$name"
    fi
}

start() {
    ensure_installed
    mkdir -p "$DIR"
    if [ "$DIR" != "$VAR/pg-ha" ] && [ -z "${PG_HA_DIR:-}" ]; then
        mkdir -p "$VAR"
        echo "$DIR" >"$VAR/pg-ha.location"
    fi
    mkdir -p "$DIR/config" "$DIR/share" "$DIR/run"
    chmod 700 "$DIR/run"
    if is_root; then chown "$PG_OS_USER": "$DIR" "$DIR/config" "$DIR/share" "$DIR/run"; fi
    start_monitor
    start_node 0
    # The first node is primary (or single) before the second one asks it for a base backup.
    wait_for "a primary" 'node_states | grep -qE " (single|primary|wait_primary) "'
    if [ ! -f "$DIR/${NODE_NAMES[1]}/PG_VERSION" ]; then
        # The base backup starts at a checkpoint, spread over minutes by default: make it now, so
        # that the backup's own finds little to write (94 s -> about 1 s on a fresh formation).
        "$PGBIN_DEFAULT/psql" -X -q -d "$(service_url | sed 's/connect_timeout=2/connect_timeout=5/')" -c CHECKPOINT
    fi
    start_node 1
    wait_for "a primary and a secondary in sync" \
        '[ "$(node_states | awk "{print \$2 \"/\" \$3}" | sort | tr "\n" " ")" = "primary/primary secondary/secondary " ]'
    say "formation up: $(node_states | tr '\n' ';')"
    service_url
}

# ---------------------------------------------------------------- stop / status
stop_one() {
    local name="$1" pid i
    pid="$(cat "$DIR/$name.pid" 2>/dev/null || true)"
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
        say "$name: not running"
        rm -f "$DIR/$name.pid"
        return
    fi
    as_pg pg_autoctl stop --pgdata "$DIR/$name" --fast >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "$name: did not stop within 30 s, killing its process group"
        kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$DIR/$name.pid"
    say "$name: stopped"
}

stop() {
    local name
    for name in "${NODE_NAMES[@]}" monitor; do
        stop_one "$name"
    done
}

status() {
    [ -f "$DIR/monitor/PG_VERSION" ] || die "no formation in $DIR (scripts/pg_ha.sh start)"
    as_pg pg_autoctl show state --pgdata "$DIR/monitor"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    url) service_url ;;
    install) ensure_installed ;;
    __as_pg)
        shift
        as_pg_exec "$@"
        ;;
    *)
        echo "usage: $0 start|stop|status|url|install" >&2
        exit 2
        ;;
esac
