#!/usr/bin/env bash
# Start the whole service under supervisord: seed the demo game, then run web, worker, beat, the
# webhook dispatcher (events) and the demo stream, each restarted whenever it exits, and once the web answers print where to look (the
# banner: URLs, the demo key). Ctrl-C stops them all.
#
#   scripts/run.sh        start (make run)
#   scripts/run.sh urls   print the banner of the running service again (make urls)
#
# The supervisord config is rendered from deploy/supervisord.conf.in into $RUN_DIR (default var/),
# with PORT, HOST, WEB_CONCURRENCY, WEB_NICE, WORKER_CONCURRENCY from the environment; LOG_DIR=var/log
# writes each process's log to a file there instead of this terminal. DEMO=0 runs without the demo.
# The processes' metrics go to $RUN_DIR/metrics, emptied here at each start. The processes log text
# lines when they write to a terminal, JSON lines otherwise; LOG_FORMAT, when set, decides.
# While it runs: .venv/bin/supervisorctl -c var/supervisord.conf status (or restart web, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
export PORT="${PORT:-8000}" HOST="${HOST:-127.0.0.1}" DEMO="${DEMO:-1}"
export RUN_DIR="${RUN_DIR:-$PWD/var}"
export PATH="$PWD/.venv/bin:$PATH"
case "$HOST" in 0.0.0.0 | "::") shown=127.0.0.1 ;; *) shown="$HOST" ;; esac
BANNER="$RUN_DIR/banner.txt" # holds the demo secret: readable by this user only
LIVE_WAIT_S=30

# The banner of the running service, or a clear "not running" (exit 1).
urls() {
    local pid
    pid=$(cat "$RUN_DIR/supervisord.pid" 2>/dev/null || true)
    if [ -z "$pid" ] || ! ps -p "$pid" -o command= 2>/dev/null | grep -q supervisord || [ ! -f "$BANNER" ]; then
        echo "The service is not running (no supervisord of make run under $RUN_DIR): start it with make run." >&2
        return 1
    fi
    cat "$BANNER"
}

# Write the banner to $BANNER: the URLs, the demo key and secret, a submit example.
banner_write() {
    local key_id secret seed
    (
        umask 077
        cat >"$BANNER" <<MSG

  Leaderboard service on http://${shown}:${PORT}/
    demo board : http://${shown}:${PORT}/games/demo/
    admin      : http://${shown}:${PORT}/admin/   (python manage.py createsuperuser)
    API docs   : http://${shown}:${PORT}/api/docs/
MSG
    )
    if [ "$DEMO" = 1 ]; then
        seed=$(python manage.py seed_demo) # a new key each time: this file keeps it for make urls
        key_id=$(python -c 'import json,sys; print(json.loads(sys.argv[1])["key_id"])' "$seed")
        secret=$(python -c 'import json,sys; print(json.loads(sys.argv[1])["secret"])' "$seed")
        cat >>"$BANNER" <<MSG
    demo key   : ${key_id}
    secret     : ${secret}
    submit one : .venv/bin/python scripts/submit.py --url http://${shown}:${PORT} --game demo \\
                   --key-id ${key_id} --secret ${secret} --player maya:50 --player leo:20
MSG
    fi
    if [ -n "${REDIS_SENTINEL:-}" ]; then
        cat >>"$BANNER" <<MSG
    redis      : the primary the sentinels ${REDIS_SENTINEL} name (${REDIS_SENTINEL_MASTER:-}; scripts/ha.sh status | stop)
MSG
    fi
    case "${DATABASE_URL:-}" in
        *@*,*)
            cat >>"$BANNER" <<MSG
    postgresql : the node of ${DATABASE_URL%%\?*} that takes writes (scripts/pg_ha.sh status)
MSG
            ;;
    esac
    if [ -n "${REDIS_CLUSTER_URL:-}" ]; then
        cat >>"$BANNER" <<MSG
    boards on  : the Redis Cluster at ${REDIS_CLUSTER_URL} (scripts/cluster.sh status | stop)
MSG
    fi
    cat >>"$BANNER" <<MSG
    processes  : .venv/bin/supervisorctl -c ${RUN_DIR}/supervisord.conf status
    again      : make urls

MSG
}

# Print the banner once http://HOST:PORT/health/live answers (at most LIVE_WAIT_S seconds), so that
# it comes after supervisord's and the processes' start-up lines; quietly nothing if supervisord
# ($1) is gone first (Ctrl-C while starting).
banner_when_live() {
    local status=0 url="http://${shown}:${PORT}/health/live"
    python - "$1" "$url" "$LIVE_WAIT_S" <<'PY' || status=$?
import os, sys, time, urllib.request

pid, url, deadline = int(sys.argv[1]), sys.argv[2], time.monotonic() + float(sys.argv[3])
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through an http_proxy
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(2)
    try:
        with opener.open(url, timeout=1) as response:
            if response.status == 200:
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.2)
sys.exit(1)
PY
    case "$status" in
        0) cat "$BANNER" ;;
        1) printf '\n  The web does not answer %s after %s s: see the lines above.\n' "$url" "$LIVE_WAIT_S" && cat "$BANNER" ;;
    esac
}

if [ "${1:-}" = urls ]; then
    urls
    exit
fi

mkdir -p "$RUN_DIR"
# Text lines for a person when the processes write to this terminal; JSON (the default) for files.
if [ -z "${LOG_FORMAT:-}" ] && [ -z "${LOG_DIR:-}" ] && [ -t 1 ]; then
    export LOG_FORMAT=text
fi
# Every process of this run writes its metrics in one folder, which /metrics reads
# (prometheus-client's multiprocess mode, common/observability.py). Emptied at each start: no
# process of an earlier run is counted. Always $RUN_DIR's own, whatever the environment says.
export PROMETHEUS_MULTIPROC_DIR="$RUN_DIR/metrics"
rm -rf "$PROMETHEUS_MULTIPROC_DIR"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
rm -f "$BANNER"
banner_write
python scripts/supervisord_conf.py --out "$RUN_DIR/supervisord.conf"
# Detached twice, so that supervisord (this shell's pid after the exec) never reaps it and logs an
# unknown pid; supervisord stays in the foreground, so Ctrl-C and SIGTERM reach it as before.
(banner_when_live "$$" &)
exec supervisord -c "$RUN_DIR/supervisord.conf"
