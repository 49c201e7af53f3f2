"""Imports of pipeline lines held in memory, through the service the file and upload imports use."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from candidates.pipeline import format as fmt
from candidates.services import ImportSummary, Progress, candidate_import_lines


def candidate_import_streams(
    streams: Iterable[tuple[str, Iterable[bytes | str]]], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    """Import from named line streams; errors name each stream."""

    def lines() -> Iterator[tuple[fmt.Location, str | bytes]]:
        for name, stream in streams:
            yield from fmt.iter_lines(stream, name)

    return candidate_import_lines(lines(), replace=replace, progress=progress)
