# VeriHarm Review. `make run` to try it, `make test` to test it.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/veriharm
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

.PHONY: run install test test-fast services sandbox-image container-smoke benchmarks check clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || "$$(scripts/find_python.sh)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

## Install, migrate, load demo data and users, start a worker and the web server.
run: install
	scripts/run_local.sh

## The whole suite against PostgreSQL and Redis at their usual local addresses.
test: install
	scripts/system_packages.sh
	scripts/start_docker.sh
	scripts/build_sandbox_image.sh
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(PY) -m pytest $(PYTEST_ARGS)

## Without the browser and sandbox preparation (for quick runs while developing).
test-fast: install
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(PY) -m pytest -m "not browser" $(PYTEST_ARGS)

## Build the container deployment on this machine and use it end to end, then tear it down
## (docs/deployment.md; a few minutes the first time, about two once the images are cached).
container-smoke:
	scripts/container_smoke.sh

## Start PostgreSQL and Redis on this machine if they are down.
services:
	scripts/start_services.sh

check: install
	$(PY) manage.py check
	DJANGO_SETTINGS_MODULE=veriharm_site.settings.production DJANGO_SECRET_KEY=$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(64))') $(PY) manage.py check --deploy --fail-level WARNING

## Print the figures of every benchmark (needs PostgreSQL, Docker and the sandbox image; about 20 minutes;
## the soak starts its own PostgreSQL and Redis on ports 55432 and 56379 and restarts them).
benchmarks: install
	scripts/start_docker.sh
	scripts/build_sandbox_image.sh
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) benchmarks/import_bench.py
	$(PY) benchmarks/next_item_bench.py
	$(PY) benchmarks/page_bench.py
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(PY) benchmarks/sandbox_overhead.py
	$(PY) benchmarks/soak.py

clean:
	rm -rf var .pytest_cache
