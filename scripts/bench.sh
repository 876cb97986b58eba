#!/usr/bin/env bash
# `make bench`: start a private service stack (web + worker + beat + the webhook dispatcher) on
# BENCH_PORT, run the ingest and read benchmarks against it, stop everything this script started.
# Uses the normal DATABASE_URL / REDIS_URL defaults (the services `make services` provides).
# BENCH_ONLY=ingest or BENCH_ONLY=reads runs one of the two.
#
#   BENCH_PORT=8765 BENCH_INGEST_ARGS="--events 300000" BENCH_READS_ARGS="--seconds 10" bash scripts/bench.sh
#   BENCH_ONLY=ingest BENCH_INGEST_ARGS="--events 20000 --offered-seconds 3 --single-seconds 3 --no-memory" \
#       bash scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PATH="$ROOT/.venv/bin:$PATH"
export DJANGO_SETTINGS_MODULE=leaderboard_site.settings.base
export LOG_LEVEL="${LOG_LEVEL:-WARNING}"
# The anti-cheat runs as shipped (the per-player buckets included: what they hold is reported).
# Only the per-key request bucket is raised, through its documented setting: the benchmark is one
# high-volume match server sending everything with one server key, far above the default 50
# requests/s a key gets. Raised, not switched off (0), so its cost stays in the figures.
export KEY_RATE_PER_S="${KEY_RATE_PER_S:-100000}" KEY_RATE_BURST="${KEY_RATE_BURST:-100000}"
# The read benchmark (and the ingest lag poller) reads from one address: the per-address read
# bucket is raised the same way, not switched off.
export READ_RATE_PER_S="${READ_RATE_PER_S:-100000}" READ_RATE_BURST="${READ_RATE_BURST:-100000}"
ONLY="${BENCH_ONLY:-all}"
case "$ONLY" in
    all | ingest | reads) ;;
    *) echo "bench: BENCH_ONLY must be ingest or reads (or unset for both)" >&2; exit 2 ;;
esac
PORT="${BENCH_PORT:-8765}"
URL="http://127.0.0.1:${PORT}"
LOGS="$ROOT/var/bench"
mkdir -p "$LOGS"

port_busy() { python -c 'import socket,sys; s=socket.socket(); sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)' "$1"; }
while port_busy "$PORT"; do PORT=$((PORT + 1)); done
URL="http://127.0.0.1:${PORT}"

PIDS=()
WEB_PIDS=()
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

# A database of the benchmarks' own, made anew for each run, and its Redis keys dropped: a run
# measures the games it makes, not every game earlier runs left behind (the anomaly job and the
# reconciliation go over every game: the old games' passes took the CPU from the one measured).
# BENCH_DATABASE_URL (default: DATABASE_URL's server, database leaderboard_bench); BENCH_KEEP_DB=1
# keeps the last run's database and keys.
BENCH_DATABASE_URL="${BENCH_DATABASE_URL:-$(python - <<'PY'
import os
from urllib.parse import urlsplit, urlunsplit
url = urlsplit(os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/leaderboard"))
print(urlunsplit(url._replace(path="/leaderboard_bench")))
PY
)}"
export DATABASE_URL="$BENCH_DATABASE_URL"
if [ "${BENCH_KEEP_DB:-0}" != 1 ]; then
    echo "bench: a new database ($DATABASE_URL)" >&2
    python - <<'PY'
import os
from urllib.parse import urlsplit, urlunsplit

import psycopg

url = urlsplit(os.environ["DATABASE_URL"])
name = url.path.lstrip("/")
with psycopg.connect(urlunsplit(url._replace(path="/postgres")), autocommit=True) as admin:
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.execute(f'CREATE DATABASE "{name}"')
PY
fi
echo "bench: migrate" >&2
python manage.py migrate --noinput >"$LOGS/migrate.log"
if [ "${BENCH_KEEP_DB:-0}" != 1 ]; then
    python -c 'import django; django.setup(); from common.redis import deployment_keys_drop; print(f"bench: {deployment_keys_drop()} Redis keys of the last run dropped")' >&2
fi

others=$(celery -A leaderboard_site inspect ping --timeout 1 2>/dev/null | grep -c '^->' || true)
if [ "${others:-0}" -gt 0 ]; then
    echo "bench: warning: $others other Celery worker(s) consume this broker's queues; they will share the apply work" >&2
fi

echo "bench: starting web, worker, beat and the webhook dispatcher on $URL (logs in var/bench/)" >&2
: >"$LOGS/web.log"
for _ in $(seq "${WEB_CONCURRENCY:-2}"); do  # as make run starts them: a socket each on one port
    nice -n "${WEB_NICE:-10}" python -m leaderboard_site.serve --host 127.0.0.1 --port "$PORT" >>"$LOGS/web.log" 2>&1 &
    PIDS+=($!)
    WEB_PIDS+=($!)
done
celery -A leaderboard_site worker -l warning -Q scoring --concurrency "${WORKER_CONCURRENCY:-2}" -n "bench-${PORT}@%h" \
    >"$LOGS/worker.log" 2>&1 &
PIDS+=($!)
export BENCH_WORKER_PIDS="$!"
# A new schedule each run: beat's file keeps each job's last run, so a kept one fires the 10-minute
# reconciliation at a moment the previous run set, in whichever phase that falls (30 s of one worker
# process at a few million rows); a new one fires it 10 minutes after the start, as a new deployment.
rm -f var/bench-beat-schedule var/bench-beat-schedule.*
celery -A leaderboard_site beat -l warning -s var/bench-beat-schedule >"$LOGS/beat.log" 2>&1 &
PIDS+=($!)
export BENCH_BEAT_PIDS="$!"
# As make run starts it: idle here (results publish no events), its polls in the figures.
python manage.py dispatch_events >"$LOGS/events.log" 2>&1 &
PIDS+=($!)
export BENCH_WEB_PIDS="${WEB_PIDS[*]}"  # the benchmarks report each kind's CPU (bench/_common.py ServiceCpu)

for i in $(seq 150); do
    if curl -fsS "$URL/health/ready" >/dev/null 2>&1; then break; fi
    for pid in "${PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null || { echo "bench: a process died at start-up; see var/bench/*.log" >&2; exit 1; }
    done
    [ "$i" -eq 150 ] && { echo "bench: $URL/health/ready never answered" >&2; exit 1; }
    sleep 0.2
done
sleep 2  # let the worker connect to the broker

# A Redis without the boards marker (flushed, or first start of this version) makes the worker rebuild
# every game's live boards from the ledger (scoring.boards_recover): measure after it, not during it.
marker="$(python -c 'import django; django.setup(); from boards.keys import epoch_key; print(epoch_key())')"
for i in $(seq 1800); do
    [ "$(python -c 'import os, redis, sys; print(redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")).exists(sys.argv[1]))' "$marker")" = 1 ] && break
    [ "$i" -eq 1 ] && echo "bench: the boards are being rebuilt from the ledger (no $marker yet); waiting" >&2
    [ "$i" -eq 1800 ] && { echo "bench: the boards marker never appeared; see var/bench/worker.log" >&2; exit 1; }
    sleep 1
done

echo "bench: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [ "$ONLY" != reads ]; then
    # shellcheck disable=SC2086
    python bench/ingest.py --url "$URL" --json "$LOGS/ingest.json" ${BENCH_INGEST_ARGS:-}
fi
if [ "$ONLY" = all ]; then
    # What the ingest run leaves behind (the worker's last tasks, the jobs of beat over a game of a
    # million results, autovacuum of the rows just written) would share the cores with the reads.
    python - <<'PY' >&2
import time


def busy() -> tuple[int, int]:
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4], sum(fields)  # all but idle and iowait


started = time.monotonic()
quiet = 0
last = busy()
while quiet < 3 and time.monotonic() - started < 180:
    time.sleep(1)
    now = busy()
    share = (now[0] - last[0]) / max(1, now[1] - last[1])
    last = now
    quiet = quiet + 1 if share < 0.15 else 0
print(f"bench: waited {time.monotonic() - started:.0f} s for the machine to go quiet after ingest (CPU under 15% for 3 s)")
PY
fi
if [ "$ONLY" != ingest ]; then
    # shellcheck disable=SC2086
    python bench/reads.py --url "$URL" --json "$LOGS/reads.json" ${BENCH_READS_ARGS:-}
fi
