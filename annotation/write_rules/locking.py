"""Row locks both sides of the app take the same way (so a study's writes and an annotator's claims
lock in one manner and one order: study member, then item, then assignment)."""

from __future__ import annotations

from django.db.models import Manager, QuerySet


def rows_locked(rows: Manager | QuerySet, *, skip_locked: bool = False) -> QuerySet:
    """SELECT ... FOR NO KEY UPDATE of these rows only: joined rows (the study) stay unlocked, and
    inserts that reference a locked row (their foreign-key check takes KEY SHARE) are not blocked."""
    return rows.select_for_update(no_key=True, of=("self",), skip_locked=skip_locked)
