#!/usr/bin/env bash
# Start the whole service under supervisord: seed the demo game, print where to look, then run web,
# worker, beat and the demo stream, each restarted whenever it exits. Ctrl-C stops them all.
#
# The supervisord config is rendered from deploy/supervisord.conf.in into $RUN_DIR (default var/),
# with PORT, HOST, WEB_CONCURRENCY, WEB_NICE, WORKER_CONCURRENCY from the environment; LOG_DIR=var/log
# writes each process's log to a file there instead of this terminal. DEMO=0 runs without the demo.
# The processes' metrics go to $RUN_DIR/metrics, emptied here at each start.
# While it runs: .venv/bin/supervisorctl -c var/supervisord.conf status (or restart web, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
export PORT="${PORT:-8000}" HOST="${HOST:-127.0.0.1}" DEMO="${DEMO:-1}"
export RUN_DIR="${RUN_DIR:-$PWD/var}"
export PATH="$PWD/.venv/bin:$PATH"
mkdir -p "$RUN_DIR"
# Every process of this run writes its metrics in one folder, which /metrics reads
# (prometheus-client's multiprocess mode, common/observability.py). Emptied at each start: no
# process of an earlier run is counted. Always $RUN_DIR's own, whatever the environment says.
export PROMETHEUS_MULTIPROC_DIR="$RUN_DIR/metrics"
rm -rf "$PROMETHEUS_MULTIPROC_DIR"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
case "$HOST" in 0.0.0.0 | "::") shown=127.0.0.1 ;; *) shown="$HOST" ;; esac
cat <<MSG

  Leaderboard service on http://${shown}:${PORT}/
    demo board : http://${shown}:${PORT}/games/demo/
    admin      : http://${shown}:${PORT}/admin/   (python manage.py createsuperuser)
    API docs   : http://${shown}:${PORT}/api/docs/
MSG
if [ "$DEMO" = 1 ]; then
    seed=$(python manage.py seed_demo)
    key_id=$(python -c 'import json,sys; print(json.loads(sys.argv[1])["key_id"])' "$seed")
    secret=$(python -c 'import json,sys; print(json.loads(sys.argv[1])["secret"])' "$seed")
    cat <<MSG
    demo key   : ${key_id}
    secret     : ${secret}
    submit one : .venv/bin/python scripts/submit.py --url http://${shown}:${PORT} --game demo \\
                   --key-id ${key_id} --secret ${secret} --player maya:50 --player leo:20
MSG
fi
if [ -n "${REDIS_CLUSTER_URL:-}" ]; then
    cat <<MSG
    boards on  : the Redis Cluster at ${REDIS_CLUSTER_URL} (scripts/cluster.sh status | stop)
MSG
fi
cat <<MSG
    processes  : .venv/bin/supervisorctl -c ${RUN_DIR}/supervisord.conf status

MSG
python scripts/supervisord_conf.py --out "$RUN_DIR/supervisord.conf"
exec supervisord -c "$RUN_DIR/supervisord.conf"
