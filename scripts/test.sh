#!/usr/bin/env bash
# `make test`'s pytest, in two passes on one machine:
#   1. every test not marked `serial`, on TEST_WORKERS pytest-xdist workers (default 2, work
#      stealing: a worker done early takes tests queued for the other); each
#      worker has its own test database (test_<name>_gw0, ...) and its own private Redis;
#   2. the tests marked `serial` (pyproject.toml's markers: real processes SIGKILLed, failovers,
#      clusters, Chromium, timing bounds under concurrency), one at a time, as before.
# Both passes always run; extra arguments (PYTEST_ARGS) go to both. Exit status: the first failing
# pass's; "no test collected" (5) only when neither pass collected any (a file or -k that selects
# tests of one pass only is fine).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTEST="${PYTEST:-.venv/bin/pytest}"
WORKERS="${TEST_WORKERS:-2}"

echo "test: pass 1/2, the tests not marked serial on $WORKERS workers" >&2
"$PYTEST" -n "$WORKERS" --dist worksteal -m "not serial" "$@"
parallel=$?
echo "test: pass 2/2, the tests marked serial, one at a time" >&2
"$PYTEST" -m serial "$@"
serial=$?
echo "test: exit status $parallel (parallel pass), $serial (serial pass)" >&2

if [ "$parallel" -eq 5 ] && [ "$serial" -eq 5 ]; then exit 5; fi
for status in "$parallel" "$serial"; do
    if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then exit "$status"; fi
done
exit 0
