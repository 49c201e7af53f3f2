"""The local demo database of `make run` (SQLite under var/) and a migration history it can no longer
follow.

A database migrated before the project's own user model (accounts.User) has admin's and the apps'
migrations applied on top of auth.User, so Django refuses to migrate it (InconsistentMigrationHistory):
no migration can move its rows to the new model. That database only ever holds what `make run`
loads (demo data and demo logins), so it is set aside, not deleted, and made anew.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.exceptions import InconsistentMigrationHistory
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone


@dataclass(frozen=True)
class StaleDatabase:
    problem: str  # Django's own sentence naming the migration applied before its dependency
    path: Path | None  # the SQLite file under VAR_DIR that may be set aside, or None when it may not


def demo_database_stale(alias: str = DEFAULT_DB_ALIAS) -> StaleDatabase | None:
    """None when the database can be migrated as it is; otherwise why not, and whether it is the
    embedded demo database (SQLite under VAR_DIR, demo data allowed) that may be recreated."""
    connection = connections[alias]
    try:
        MigrationLoader(connection, ignore_no_migrations=True).check_consistent_history(connection)
    except InconsistentMigrationHistory as error:
        return StaleDatabase(str(error), _demo_sqlite_path(alias))
    return None


def _demo_sqlite_path(alias: str) -> Path | None:
    db = settings.DATABASES[alias]
    if db["ENGINE"] != "django.db.backends.sqlite3" or not getattr(settings, "VERIHARM_DEMO_ALLOWED", False):
        return None
    path = Path(db["NAME"]).resolve()
    return path if path.is_relative_to(Path(settings.VAR_DIR).resolve()) else None


def demo_database_set_aside(stale: StaleDatabase, alias: str = DEFAULT_DB_ALIAS) -> Path:
    """Move the demo database and the state that names its rows (the filesystem broker's queued
    messages, uploaded imports, kept final states) into one folder under VAR_DIR; returns it."""
    if stale.path is None:
        raise ValueError("only the embedded demo database under VAR_DIR is set aside")
    connections[alias].close()
    var_dir = Path(settings.VAR_DIR).resolve()
    aside = var_dir / f"set-aside-{timezone.now():%Y%m%dT%H%M%SZ}"
    aside.mkdir(parents=True)
    moved = [stale.path, *(stale.path.with_name(stale.path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]
    moved += [var_dir / "broker", Path(settings.VERIHARM_IMPORT_DIR), Path(settings.VERIHARM_FINAL_STATE_DIR)]
    for path in moved:
        if path.exists() and path.resolve().is_relative_to(var_dir):
            shutil.move(path, aside / path.name)
    return aside
