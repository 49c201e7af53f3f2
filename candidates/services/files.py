"""The import of files on disk (commands, the demo loader, tests): their numbered lines streamed into
`candidates.importing`, all or nothing across the files."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..importing import ImportSummary, Progress, candidate_import_lines
from ..pipeline import format as fmt


def candidate_import_files(
    paths: Iterable[str], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    def lines() -> Iterator[tuple[fmt.Location, str | bytes]]:
        for path in paths:
            with open(path, "rb") as handle:
                yield from fmt.iter_lines(handle, str(path))

    return candidate_import_lines(lines(), replace=replace, progress=progress)
