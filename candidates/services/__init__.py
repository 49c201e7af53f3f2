"""Writes to the candidate pool, for commands, tests and the apps built on candidates: the import
(all-or-nothing: `candidates.importing`'s entry, re-exported, and its file variant) and the
synthetic mark of the demo's candidates. The export in the pipeline format is a read
(`candidates.pool.selectors.pipeline_export_lines`).

A package of its own, above `candidates.importing`: the base modules of candidates, which the
import's writers stand on, never import it."""

from __future__ import annotations

from collections.abc import Iterable

from ..importing import ImportRefused, ImportSummary, Progress, candidate_import, candidate_import_lines
from ..pool.synthetic import candidates_mark_synthetic
from .files import candidate_import_files

__all__ = [
    "ImportRefused",
    "ImportSummary",
    "Progress",
    "candidate_import",
    "candidate_import_files",
    "candidate_import_lines",
    "candidates_mark_demo",
]


def candidates_mark_demo(external_ids: Iterable[str]) -> int:
    """Mark the candidates `manage.py load_demo` made as synthetic (`candidates.pool.synthetic`: their
    pages say their judge scores and Q are generated); returns how many are marked now. Idempotent."""
    return candidates_mark_synthetic(external_ids)
