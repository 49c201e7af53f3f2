"""Shared fixtures: real PostgreSQL and Redis, users in each role, logged-in clients."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from tests.suite_time import SuiteTime
from veriharm_site.roles import ADMIN, ANNOTATOR, CURATOR, ensure_roles

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "data" / "examples"
PASSWORD = "test-password-1"


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


# Fixtures that tell what a test needs; the markers they earn select tiers (`-m "not sandbox"`).
DB_FIXTURES = frozenset({"db", "transactional_db", "django_db_setup", "live_server"})
WORKER_FIXTURES = frozenset({"celery_worker_thread", "broker"})
SANDBOX_FIXTURES = frozenset({"sandboxes_ready", "sandbox_base", "backends", "backend", "pooled_docker"})
SERVICE_MARKERS = ("db", "worker")
# tests/unit/ is the tier that needs no service at all: `make test-unit` runs it with PostgreSQL, Redis
# and Docker pointed at closed ports.
UNIT = REPO / "tests" / "unit"
UNIT_REFUSES = ("db", "worker", "sandbox", "browser", "demo")


def _tier_markers(item: pytest.Item) -> list[str]:
    fixtures = set(getattr(item, "fixturenames", ()))
    path = item.path.resolve().relative_to(REPO).as_posix()
    found = []
    if fixtures & DB_FIXTURES or item.get_closest_marker("django_db"):
        found.append("db")
    if fixtures & WORKER_FIXTURES:
        found.append("worker")
    if path.startswith("tests/evaluation/sandbox/") or fixtures & SANDBOX_FIXTURES:
        found.append("sandbox")
    if path.startswith("tests/browser/"):
        found.append("browser")
    return found


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks each test with what it needs, and refuses a test in tests/unit/ that needs anything.

    tryfirst: the markers must be on the items before `-m` deselects by them. Touching the database
    without the db marker fails already (pytest-django's blocker); this catches the test that asks."""
    for item in items:
        for name in _tier_markers(item):
            if not item.get_closest_marker(name):
                item.add_marker(name)
    refused = [
        f"{item.nodeid} needs {', '.join(name for name in UNIT_REFUSES if item.get_closest_marker(name))}"
        for item in items
        if item.path.resolve().is_relative_to(UNIT) and any(item.get_closest_marker(name) for name in UNIT_REFUSES)
    ]
    if refused:
        raise pytest.UsageError(
            "tests/unit/ holds tests that need no service; move these out of it:\n  - " + "\n  - ".join(refused)
        )


class _ServicesCheck:
    """Refuses to start when a selected test needs PostgreSQL or Redis and either is unreachable; a run
    of tests that need neither (the unit tier) starts without them.

    trylast: it sees the tests `-m` and `-k` left, and does not run when an earlier hook refused."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not config.option.collectonly and any(
            item.get_closest_marker(name) for item in items for name in SERVICE_MARKERS
        ):
            _services_check()


FIGURES = "figures"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The figures tests recorded (`record_property("figures", {...})`), printed after the run whether
    they passed or not: a passing test's output is captured, and under pytest-xdist only what a
    report carries (its user properties) reaches this process."""
    reports = [r for kind in ("passed", "failed") for r in terminalreporter.getreports(kind) if r.when == "call"]
    recorded = [(r.nodeid, value) for r in reports for name, value in r.user_properties if name == FIGURES]
    if not recorded:
        return
    terminalreporter.section("figures")
    for nodeid, figures in recorded:
        terminalreporter.write_line(nodeid)
        for what, value in figures.items():
            terminalreporter.write_line(f"  {what}: {value:.1f}" if isinstance(value, float) else f"  {what}: {value}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_ServicesCheck(), "veriharm-services-check")
    config.pluginmanager.register(SuiteTime(), "veriharm-suite-time")


def _services_check() -> None:
    db = settings.DATABASES["default"]
    broker = urlparse(settings.CELERY_BROKER_URL)
    problems = []
    if db["ENGINE"] != "django.db.backends.postgresql":
        problems.append(f"the tests need PostgreSQL, but DATABASE_URL points to {db['ENGINE']}")
    elif not _reachable(db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432)):
        problems.append(
            f"PostgreSQL is not reachable at {db.get('HOST')}:{db.get('PORT') or 5432} "
            "(start it, e.g. `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, "
            "or set DATABASE_URL)"
        )
    if broker.scheme != "redis" or not _reachable(broker.hostname or "127.0.0.1", broker.port or 6379):
        problems.append(
            f"Redis is not reachable at {settings.CELERY_BROKER_URL} "
            "(start it, e.g. `redis-server --daemonize yes --bind 127.0.0.1 --port 6379`, or set CELERY_BROKER_URL)"
        )
    if problems:
        raise pytest.UsageError("Cannot run the test suite:\n  - " + "\n  - ".join(problems))


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    """Every test starts with an empty cache, whatever an earlier one left in it."""
    from django.core.cache import cache

    cache.clear()
    yield


def make_user(username: str, role: str | None):
    ensure_roles()
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    if role:
        user.groups.add(Group.objects.get(name=role))
    if role == ADMIN:
        user.is_staff = True
        user.save()
    return user


@pytest.fixture
def annotator(db):
    return make_user("ann", ANNOTATOR)


@pytest.fixture
def curator(db):
    return make_user("cur", CURATOR)


@pytest.fixture
def admin_user(db):
    return make_user("adm", ADMIN)


def _client(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def annotator_client(annotator) -> APIClient:
    return _client(annotator)


@pytest.fixture
def curator_client(curator) -> APIClient:
    return _client(curator)


@pytest.fixture
def admin_client_(admin_user) -> APIClient:
    return _client(admin_user)


@pytest.fixture
def examples_imported(db):
    from candidates.services import candidate_import_files

    return candidate_import_files([str(EXAMPLES / "candidates.jsonl"), str(EXAMPLES / "search.jsonl")])


@pytest.fixture
def celery_worker_thread(transactional_db) -> Iterator[None]:
    """A real Celery worker consuming from Redis in a thread of this process (not eager mode)."""
    from celery.contrib.testing.worker import start_worker

    from veriharm_site.celery import app

    app.control.purge()  # messages of earlier, aborted runs name rows of another database
    with start_worker(
        app, pool="solo", concurrency=1, perform_ping_check=False, loglevel="WARNING", shutdown_timeout=30
    ):
        yield
