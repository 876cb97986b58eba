#!/usr/bin/env bash
# A local Redis Cluster for development: 3 masters + 3 replicas on 127.0.0.1, ports
# CLUSTER_PORT_BASE..+5 (default 7000-7005; the cluster bus on each port + 10000), data and logs
# under var/redis-cluster/ (nothing persisted: the nodes run with --save '' --appendonly no).
#
#   scripts/cluster.sh start    start it, or say it is already running (restarts nodes that died)
#   scripts/cluster.sh status   each node's role and pid; exit 0 only when cluster_state is ok
#   scripts/cluster.sh stop     stop the nodes this script started and remove var/redis-cluster/
#
# start and status print REDIS_CLUSTER_URL=redis://127.0.0.1:PORT on stdout (for
# redis.cluster.RedisCluster.from_url); messages go to stderr. The work is done by
# common/redis_cluster.py (python -m common.redis_cluster), which the tests use as well.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VAR="$ROOT/var"
DIR="$VAR/redis-cluster"
CLUSTER_PORT_BASE="${CLUSTER_PORT_BASE:-7000}"

say() { echo "cluster: $*" >&2; }
die() { echo "cluster: error: $*" >&2; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# As scripts/services.sh does it: Debian's redis-server (with redis-cli) when missing.
apt_install() {
    local sudo=()
    if ! is_root; then
        command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to apt-get install $*"
        sudo=(sudo)
    fi
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; please install $* yourself"
    say "installing $* with apt-get ..."
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

python_bin() {
    if [ -x "$ROOT/.venv/bin/python" ]; then
        echo "$ROOT/.venv/bin/python"
    else
        command -v python3 || die "python3 not found"
    fi
}

# One start/stop at a time (a second start waits, then finds the cluster running).
with_lock() {
    mkdir -p "$VAR"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$VAR/.cluster.lock"
        flock -w 120 9 || die "timed out waiting for another cluster.sh"
    fi
}

cluster() {
    # The nodes must not inherit the lock (fd 9): Python's subprocess closes it for them.
    (cd "$ROOT" && "$(python_bin)" -m common.redis_cluster "$1" --dir "$DIR" --port-base "$CLUSTER_PORT_BASE")
}

case "${1:-}" in
    start | up)
        case "$CLUSTER_PORT_BASE" in
            '' | *[!0-9]*) die "CLUSTER_PORT_BASE must be a port number, not '$CLUSTER_PORT_BASE'" ;;
        esac
        [ "$CLUSTER_PORT_BASE" -ge 1024 ] && [ "$CLUSTER_PORT_BASE" -le 55530 ] \
            || die "CLUSTER_PORT_BASE must be 1024..55530 (the bus ports are +10000)"
        if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
            apt_install redis-server
        fi
        with_lock
        cluster start
        ;;
    stop | down)
        with_lock
        cluster stop
        ;;
    status)
        cluster status
        ;;
    *)
        echo "usage: $0 start|stop|status   (env CLUSTER_PORT_BASE, default 7000)" >&2
        exit 2
        ;;
esac
