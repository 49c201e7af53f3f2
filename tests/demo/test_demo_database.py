"""A local demo database migrated before accounts.User: `make run` sets it aside and makes a new one;
any other database in that state is refused untouched."""

import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import REPO


def _manage(*args: str, var_dir: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={
            **clean,
            "DJANGO_SETTINGS_MODULE": "veriharm_site.settings.local",
            "VERIHARM_VAR_DIR": str(var_dir),
            **env,
        },
    )


@pytest.fixture(scope="module")
def made_before_accounts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database whose history has auth's, admin's and the apps' migrations but not accounts' first,
    as every database migrated before the custom user model has."""
    var_dir = tmp_path_factory.mktemp("template")
    db = var_dir / "db.sqlite3"
    migrated = _manage("migrate", "--noinput", "-v0", var_dir=var_dir)
    assert migrated.returncode == 0, migrated.stderr
    # closing(): a connection's own `with` commits but leaves it open.
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("DELETE FROM django_migrations WHERE app = 'accounts'")
    refused = _manage("migrate", "--noinput", "-v0", var_dir=var_dir)
    assert "InconsistentMigrationHistory" in refused.stderr
    return db


def _copy(template: Path, to: Path) -> Path:
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, to)
    return to


def _history(db: Path) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT app, name FROM django_migrations ORDER BY id").fetchall()


def test_a_demo_database_from_before_accounts_user_is_set_aside_and_made_anew(tmp_path, made_before_accounts):
    var_dir = tmp_path / "var"
    db = _copy(made_before_accounts, var_dir / "db.sqlite3")
    (var_dir / "broker" / "in").mkdir(parents=True, exist_ok=True)
    (var_dir / "broker" / "in" / "message").write_text("a task naming a row of the old database")
    old = _history(db)

    # Without --recreate it explains and changes nothing.
    checked = _manage("demo_database_check", var_dir=var_dir)
    assert checked.returncode != 0 and "accounts.User" in checked.stderr and "--recreate" in checked.stderr
    assert _history(db) == old and not list(var_dir.glob("set-aside-*"))

    # What make run does: the old one is kept aside (with its queued messages), a new one migrates.
    recreated = _manage("demo_database_check", "--recreate", var_dir=var_dir)
    assert recreated.returncode == 0, recreated.stderr
    assert "only the demo data" in recreated.stdout
    (aside,) = var_dir.glob("set-aside-*")
    assert _history(aside / "db.sqlite3") == old
    assert (aside / "broker" / "in" / "message").exists() and not db.exists()
    assert _manage("migrate", "--noinput", "-v0", var_dir=var_dir).returncode == 0
    assert ("accounts", "0001_initial") in _history(db)
    assert _manage("demo_database_check", var_dir=var_dir).returncode == 0


def test_another_database_in_that_state_is_refused_and_left_as_it_is(tmp_path, made_before_accounts):
    var_dir = tmp_path / "var"
    elsewhere = _copy(made_before_accounts, tmp_path / "elsewhere.sqlite3")
    old = _history(elsewhere)
    refused = _manage("demo_database_check", "--recreate", var_dir=var_dir, DATABASE_URL=f"sqlite:///{elsewhere}")
    assert refused.returncode != 0 and "not the local demo database" in refused.stderr
    assert _history(elsewhere) == old and not list(var_dir.glob("set-aside-*"))
