#!/usr/bin/env bash
# `make bench`: start a private service stack (web + worker + beat) on BENCH_PORT, run the ingest and
# read benchmarks against it, stop everything this script started. Uses the normal DATABASE_URL /
# REDIS_URL defaults (the services `make services` provides).
#
#   BENCH_PORT=8765 BENCH_INGEST_ARGS="--events 200000" BENCH_READS_ARGS="--seconds 10" bash scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PATH="$ROOT/.venv/bin:$PATH"
export DJANGO_SETTINGS_MODULE=leaderboard_site.settings.base
export LOG_LEVEL="${LOG_LEVEL:-WARNING}"
# One load generator sends for 50,000 players from one key: the anti-cheat buckets (default 5
# results per player, 50 requests/s per key) would quarantine or refuse most of it. 0 = off.
export PLAYER_BUCKET_BURST="${PLAYER_BUCKET_BURST:-0}" KEY_RATE_PER_S="${KEY_RATE_PER_S:-0}"
export READ_RATE_PER_S="${READ_RATE_PER_S:-0}"  # the read benchmark comes from one address
PORT="${BENCH_PORT:-8765}"
URL="http://127.0.0.1:${PORT}"
LOGS="$ROOT/var/bench"
mkdir -p "$LOGS"

port_busy() { python -c 'import socket,sys; s=socket.socket(); sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)' "$1"; }
while port_busy "$PORT"; do PORT=$((PORT + 1)); done
URL="http://127.0.0.1:${PORT}"

PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do
        local alive=0
        for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" -eq 0 ] && break
        sleep 0.2
    done
    for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "bench: migrate" >&2
python manage.py migrate --noinput >"$LOGS/migrate.log"

others=$(celery -A leaderboard_site inspect ping --timeout 1 2>/dev/null | grep -c '^->' || true)
if [ "${others:-0}" -gt 0 ]; then
    echo "bench: warning: $others other Celery worker(s) consume this broker's queues; they will share the apply work" >&2
fi

echo "bench: starting web, worker and beat on $URL (logs in var/bench/)" >&2
uvicorn --host 127.0.0.1 --port "$PORT" --workers "${WEB_CONCURRENCY:-2}" --no-access-log --lifespan off leaderboard_site.asgi:application >"$LOGS/web.log" 2>&1 &
PIDS+=($!)
celery -A leaderboard_site worker -l warning -Q scoring --concurrency 2 -n "bench-${PORT}@%h" \
    >"$LOGS/worker.log" 2>&1 &
PIDS+=($!)
celery -A leaderboard_site beat -l warning -s var/bench-beat-schedule >"$LOGS/beat.log" 2>&1 &
PIDS+=($!)

for i in $(seq 150); do
    if curl -fsS "$URL/health/ready" >/dev/null 2>&1; then break; fi
    for pid in "${PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null || { echo "bench: a process died at start-up; see var/bench/*.log" >&2; exit 1; }
    done
    [ "$i" -eq 150 ] && { echo "bench: $URL/health/ready never answered" >&2; exit 1; }
    sleep 0.2
done
sleep 2  # let the worker connect to the broker

echo "bench: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# shellcheck disable=SC2086
python bench/ingest.py --url "$URL" --json "$LOGS/ingest.json" ${BENCH_INGEST_ARGS:-}
# shellcheck disable=SC2086
python bench/reads.py --url "$URL" --json "$LOGS/reads.json" ${BENCH_READS_ARGS:-}
