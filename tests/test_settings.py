"""Settings come from the environment; production refuses to start unsafely."""

import os
import secrets
import subprocess
import sys

import redis

from tests.conftest import REPO


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_"))}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**clean, **env}, capture_output=True, text=True)


def test_the_embedded_default_needs_no_server(tmp_path):
    result = _run(
        "import django; django.setup(); from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL)",
        DJANGO_SETTINGS_MODULE="veriharm_site.settings.local",
        VERIHARM_VAR_DIR=str(tmp_path),
    )
    assert result.stdout.split() == ["django.db.backends.sqlite3", "filesystem://"], result.stderr


def test_database_and_broker_urls_select_postgresql_and_redis(tmp_path):
    result = _run(
        "import django; django.setup(); from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL)",
        DJANGO_SETTINGS_MODULE="veriharm_site.settings.local",
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/x",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/3",
        VERIHARM_VAR_DIR=str(tmp_path),
    )
    assert result.stdout.split() == ["django.db.backends.postgresql", "redis://127.0.0.1:6379/3"], result.stderr


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = _run(
        "import django; django.setup()",
        DJANGO_SETTINGS_MODULE="veriharm_site.settings.production",
        VERIHARM_VAR_DIR=str(tmp_path),
    )
    assert result.returncode != 0 and "DJANGO_SECRET_KEY must be set" in result.stderr


def test_production_passes_the_deployment_checks(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
            "DJANGO_SETTINGS_MODULE": "veriharm_site.settings.production",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
            "VERIHARM_VAR_DIR": str(tmp_path),
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_shipped_settings_recover_a_dead_worker_in_minutes_and_never_redeliver_a_running_task(tmp_path):
    result = _run(
        "import django; django.setup(); from django.conf import settings as s;"
        "from veriharm_site.recovery import broker_settings_problems as p;"
        "print(s.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'], s.CELERY_TASK_TIME_LIMIT,"
        " s.VERIHARM_TRIAL_LEASE_SECONDS, s.VERIHARM_RECOVERY_SWEEP_SECONDS, s.VERIHARM_RECOVERY_QUEUED_SECONDS,"
        " len(p(s)))",
        DJANGO_SETTINGS_MODULE="veriharm_site.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        CELERY_BROKER_URL="redis://127.0.0.1:6379/3",
        VERIHARM_VAR_DIR=str(tmp_path),
    )
    visibility, hard_limit, lease, sweep, queued, problems = (float(v) for v in result.stdout.split())
    assert visibility > hard_limit, "a running trial would be delivered a second time"
    assert 0 < sweep and lease + sweep <= 5 * 60, "a killed worker's trial must come back in minutes"
    assert 0 < queued <= 15 * 60 and problems == 0


def test_a_worker_refuses_to_start_when_the_broker_could_redeliver_a_running_task(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "veriharm_site",
            "worker",
            "--pool=solo",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            "refused@%h",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
            "DJANGO_SETTINGS_MODULE": "tests.redelivering_settings",
            "PYTHONPATH": str(REPO),
        },
    )
    assert result.returncode != 0
    assert "visibility_timeout (3600s) must exceed CELERY_TASK_TIME_LIMIT (3600s)" in result.stdout + result.stderr


def test_each_parallel_test_process_has_queues_of_its_own(tmp_path):
    """A message published by one pytest-xdist process is invisible to another on the same Redis
    database, whose worker would otherwise run it against the wrong test database."""
    setup = "import django; django.setup(); from veriharm_site.celery import app;"
    waiting = (
        "from veriharm_site.broker_messages import waiting_tasks as w; print(sorted(w(app).get('tests.nothing', ())));"
    )
    publish = "app.send_task('tests.nothing', args=[424242], queue='default');"
    env = {
        "DJANGO_SETTINGS_MODULE": "veriharm_site.settings.test",
        "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15"),
        "VERIHARM_VAR_DIR": str(tmp_path),
    }
    own = f"tests-{secrets.token_hex(4)}"
    other = f"{own}-other"
    try:
        published = _run(setup + publish + waiting, PYTEST_XDIST_WORKER=own, **env)
        assert published.stdout.split() == ["[424242]"], published.stderr
        elsewhere = _run(setup + waiting, PYTEST_XDIST_WORKER=other, **env)
        assert elsewhere.stdout.split() == ["[]"], elsewhere.stderr
    finally:
        purged = _run(setup + "app.control.purge();" + waiting, PYTEST_XDIST_WORKER=own, **env)
        assert purged.stdout.split() == ["[]"], purged.stderr
        client = redis.Redis.from_url(env["CELERY_BROKER_URL"])
        for prefix in (own, other):  # the queues' bindings, which a purge keeps
            for key in client.scan_iter(match=f"veriharm-tests-{prefix}:*"):
                client.delete(key)
