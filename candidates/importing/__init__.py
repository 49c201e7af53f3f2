"""The pipeline import, all or nothing: one entry, two writers, one ranking rule.

- `outcome.py`   ImportSummary, and ImportRefused (a `Refused` naming every bad line)
- `ranking.py`   the ranking rule, defined once: the Python sort key and the SQL window both read it
- `rows.py`      what both writers share: record -> row values, a replacing import's revision
                 (through `curation.revisions.revision_append`), the searches, planner statistics
- `postgres.py`  the bulk writer: COPY into a staging table, set-based checks, ranking and inserts
- `portable.py`  the portable writer: records in memory, ORM writes (SQLite; runs on PostgreSQL too)

`candidate_import` (parsed records) and `candidate_import_lines` (numbered lines, streamed on
PostgreSQL) pick the writer for the database; `candidates.services` re-exports them with the file
and stream variants.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

from django.db import connection

from ..pipeline import format as fmt
from . import portable, postgres
from .outcome import ImportRefused, ImportSummary
from .rows import Progress

__all__ = ["ImportRefused", "ImportSummary", "Progress", "candidate_import", "candidate_import_lines", "writer"]


def writer() -> ModuleType:
    """The writer for this database: the bulk one where there is COPY, the portable one elsewhere."""
    return postgres if connection.vendor == "postgresql" else portable


def candidate_import(
    parsed: fmt.ParseResult, *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    """Import validated records, all or nothing. Raises ImportRefused naming every bad line."""
    return writer().import_parsed(parsed, replace=replace, progress=progress)


def candidate_import_lines(
    lines: Iterable[tuple[fmt.Location, str | bytes]], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    """Validate and import numbered lines, all or nothing, streamed: on PostgreSQL no more than a
    line's worth of candidates is held in memory, however long the input."""
    return writer().import_lines(lines, replace=replace, progress=progress)
