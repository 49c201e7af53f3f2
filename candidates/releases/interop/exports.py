"""The exports of a frozen release for other harnesses, by the name the command, page and API use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...models import Release
from . import harbor_export, inspect_export


@dataclass(frozen=True)
class HarnessExport:
    label: str
    files: Callable[[Release], tuple[str, dict[str, bytes]]]
    archive: Callable[[Release], tuple[str, bytes]]


HARNESS_EXPORTS: dict[str, HarnessExport] = {
    "inspect": HarnessExport(
        "Inspect AI task", inspect_export.release_inspect_files, inspect_export.release_inspect_archive
    ),
    "harbor": HarnessExport("Harbor dataset", harbor_export.release_harbor_files, harbor_export.release_harbor_archive),
}
