# Developer entry points. `make run` starts the whole stack; `make test` runs the suite.
SHELL := /bin/bash
PYTHON ?= python3
PORT ?= 8000
PYTEST_ARGS ?=
export PORT

VENV := .venv
PY := $(VENV)/bin/python

.DEFAULT_GOAL := help
.PHONY: help venv services services-stop migrate run run-cluster run-ha ha-stop urls test bench lint typecheck layers check schema

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt | $(PY)
	$(VENV)/bin/pip install --disable-pip-version-check -q -r requirements.txt
	@touch $@

venv: $(VENV)/.installed ## create .venv and install requirements.txt (only when it changed)

services: ## make PostgreSQL and Redis reachable (starts own under var/ if needed)
	bash scripts/services.sh

services-stop: ## stop the PostgreSQL/Redis that services.sh started under var/
	bash scripts/services.sh stop

migrate: venv services ## apply database migrations
	$(PY) manage.py migrate --noinput

run: venv services migrate ## start the stack on PORT (default 8000): web, worker, beat, demo
	$(PY) manage.py collectstatic --noinput >/dev/null
	bash scripts/run.sh

urls: ## print the running make run's URLs, demo key and secret again
	@bash scripts/run.sh urls

run-cluster: venv services migrate ## make run with the boards on a local Redis Cluster (3 masters + 3 replicas, ports 7000-7005)
	$(PY) manage.py collectstatic --noinput >/dev/null
	export $$(bash scripts/cluster.sh start) && bash scripts/run.sh

run-ha: venv ## make run on failover stores: pg_auto_failover (monitor, primary, sync secondary: 5440-5442) and Redis Sentinel (6390-6394)
	export $$(bash scripts/ha.sh start) && $(MAKE) --no-print-directory run

ha-stop: ## stop make run-ha's PostgreSQL formation, Redis primary, replica and sentinels (data stays in var/)
	bash scripts/ha.sh stop

test: venv services ## run the test suite: 2 workers, then the serial tests (extra args: PYTEST_ARGS=...); installs chromium if missing
	bash scripts/browser.sh
	bash scripts/test.sh $(PYTEST_ARGS)

bench: venv services ## run the benchmarks
	bash scripts/bench.sh

lint: venv ## ruff check + format check
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

typecheck: venv ## mypy on every app (strict on services, selectors, the Redis modules and the tasks)
	$(VENV)/bin/mypy

layers: venv ## import-linter: apps import only from the layers below them (pyproject.toml)
	PYTHONPATH=. $(VENV)/bin/lint-imports

check: venv lint typecheck layers ## lint, types, layers and migrations in sync (CI runs this before the tests)
	$(PY) manage.py makemigrations --check --dry-run >/dev/null
	$(PY) scripts/check_function_length.py

schema: ## regenerate and validate docs/openapi.yaml
	$(PY) manage.py spectacular --file docs/openapi.yaml --validate
