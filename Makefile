# VeriHarm Review. `make run` to try it, `make test` to test it.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/veriharm
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15
# The unit tier runs with PostgreSQL, Redis and Docker pointed at nothing, so a test that needs one fails.
UNIT_ENV := DATABASE_URL=postgres://postgres@127.0.0.1:1/none CELERY_BROKER_URL=redis://127.0.0.1:1/0 DOCKER_HOST=unix:///nonexistent/docker.sock
UNIT_TESTS := $(UNIT_ENV) $(PY) -m pytest tests/unit

# Line coverage of the apps ([tool.coverage] in pyproject.toml); COVERAGE_ARGS= turns it off,
# COVERAGE_ARGS="--cov --cov-branch" adds branches at a third more time for the database tests.
COVERAGE_ARGS ?= --cov --cov-report=term-missing:skip-covered
# The suite in this many pytest-xdist processes (docs/development.md, "Test suite time": much of it waits on
# workers, sandboxes and Chromium). Each process has its own test database and broker keys; no test needs to
# share a process with another. TEST_PROCESSES=0 runs everything in the one pytest process. Tests are
# handed out one at a time (--maxschedchunk 1), in pytest-django's order, to whichever process is free:
# in larger chunks, one process was left with the last queue of minute-long worker and sandbox tests
# while the other stood idle for ten minutes.
TEST_PROCESSES ?= 2
XDIST_ARGS := $(if $(filter 0,$(TEST_PROCESSES)),,-n $(TEST_PROCESSES) --maxschedchunk 1)
# One lock for every Python the project runs on: the venv's (3.12+) and the images' (3.12, 3.13).
LOCK_ARGS := --universal --python-version 3.12 --generate-hashes --quiet --custom-compile-command "make lock"

.PHONY: run install test test-unit test-fast test-local lint format lock services sandbox-image pin-harness container-smoke benchmarks check clean

# Installs exactly what requirements.lock pins (hash-checked); edit requirements*.txt, then `make lock`.
$(STAMP): requirements.lock
	test -x $(PY) || "$$(scripts/find_python.sh)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --require-hashes -r requirements.lock
	scripts/install_compose_plugin.sh
	touch $(STAMP)

install: $(STAMP)

## Install, migrate, load demo data and users, start a worker and the web server.
run: install
	scripts/run_local.sh

## Lint first (stops at any finding), then the unit tier (seconds, no service), then the whole suite
## against PostgreSQL and Redis at their usual local addresses, with coverage of the apps.
test: install lint
	$(UNIT_TESTS)
	scripts/system_packages.sh
	scripts/start_docker.sh
	scripts/install_compose_plugin.sh
	scripts/build_sandbox_image.sh
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(PY) -m pytest $(XDIST_ARGS) $(COVERAGE_ARGS) $(PYTEST_ARGS)

## Lint: ruff's rules and formatting, then mypy (configuration in pyproject.toml). Changes nothing.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

## Apply ruff's safe fixes and its formatting to the whole tree.
format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

## Re-pin requirements.txt + requirements-dev.txt (requirements.lock, for make) and requirements.txt
## alone (requirements-runtime.lock, for the image), with hashes. Keeps current pins where they
## still fit; delete a lock file first to take the newest of everything.
lock:
	test -x $(PY) || "$$(scripts/find_python.sh)" -m venv $(VENV)
	$(PY) -m pip install --quiet "$$(grep '^uv==' requirements-dev.txt)"
	$(VENV)/bin/uv pip compile $(LOCK_ARGS) requirements-dev.txt -o requirements.lock
	$(VENV)/bin/uv pip compile $(LOCK_ARGS) requirements.txt -c requirements.lock -o requirements-runtime.lock

## The tests that need no service at all (tests/unit/): no database, Redis, Docker or sandbox; seconds.
test-unit: install
	$(UNIT_TESTS) $(PYTEST_ARGS)

## Without the browser tests, the `make run` demo test and the sandbox preparation (quick runs while developing).
test-fast: install
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(PY) -m pytest $(XDIST_ARGS) -m "not browser and not demo" $(PYTEST_ARGS)

## The whole suite on the test database the last run left (--reuse-db: kept, and only new migrations
## applied, instead of made and migrated anew), without lint or the system preparation; for local runs
## only, never CI. PYTEST_ARGS=--create-db makes it anew (after a branch with other migrations).
test-local: install
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(PY) -m pytest --reuse-db $(PYTEST_ARGS)

## Build the container deployment on this machine and use it end to end, then tear it down
## (docs/deployment.md; a few minutes the first time, about two once the images are cached).
container-smoke:
	scripts/container_smoke.sh

## Re-pin an npm harness to another release (docs/harnesses.md): make pin-harness HARNESS=codex VERSION=0.172.0
pin-harness:
	scripts/pin_harness.sh "$(HARNESS)" "$(VERSION)"

## Start PostgreSQL and Redis on this machine if they are down.
services:
	scripts/start_services.sh

check: install
	$(PY) manage.py check
	DJANGO_SETTINGS_MODULE=veriharm_site.settings.production DJANGO_SECRET_KEY=$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(64))') $(PY) manage.py check --deploy --fail-level WARNING

## Print the figures of every benchmark (needs PostgreSQL, Docker and the sandbox image; about 30 minutes;
## the soak starts its own PostgreSQL and Redis on ports 55432 and 56379 and restarts them).
benchmarks: install
	scripts/start_docker.sh
	scripts/build_sandbox_image.sh
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) benchmarks/import_bench.py
	$(PY) benchmarks/next_item_bench.py
	$(PY) benchmarks/page_bench.py
	$(PY) benchmarks/v3ast_pages.py
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(PY) benchmarks/sandbox_overhead.py
	$(PY) benchmarks/soak.py
	$(PY) benchmarks/generation_bench.py

clean:
	rm -rf var .pytest_cache
