"""Writes to the candidate pool: the import (all-or-nothing, `candidates.importing`) and the
synthetic mark of the demo's candidates. The export in the pipeline format is a read
(`candidates.selectors.pipeline_export_lines`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .importing import ImportRefused, ImportSummary, Progress, candidate_import, candidate_import_lines
from .pipeline import format as fmt
from .synthetic import candidates_mark_synthetic

__all__ = [
    "ImportRefused",
    "ImportSummary",
    "Progress",
    "candidate_import",
    "candidate_import_files",
    "candidate_import_lines",
    "candidates_mark_demo",
]


def candidate_import_files(
    paths: Iterable[str], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    def lines() -> Iterator[tuple[fmt.Location, str | bytes]]:
        for path in paths:
            with open(path, "rb") as handle:
                yield from fmt.iter_lines(handle, str(path))

    return candidate_import_lines(lines(), replace=replace, progress=progress)


def candidates_mark_demo(external_ids: Iterable[str]) -> int:
    """Mark the candidates `manage.py load_demo` made as synthetic (`candidates.synthetic`: their
    pages say their judge scores and Q are generated); returns how many are marked now. Idempotent."""
    return candidates_mark_synthetic(external_ids)
