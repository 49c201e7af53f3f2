"""Panels that the apps built on candidates add to a candidate's page, as read models.

The candidates app never imports those apps: each registers a source here when it loads
(`AppConfig.ready`). A source takes the candidate and the reader and returns a `Panel` (its
template and a frozen read model, built and permission-gated by the source), or None when this
reader sees nothing of it. The page's view asks for them; templates only render what it got.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .models import Candidate


@dataclass(frozen=True)
class Panel:
    template: str  # rendered with the read model's fields as its context
    data: Any  # a frozen dataclass

    def fields(self) -> dict[str, Any]:
        return {f.name: getattr(self.data, f.name) for f in dataclasses.fields(self.data)}


PanelSource = Callable[[Candidate, Any], "Panel | None"]

_sources: list[tuple[int, PanelSource]] = []


def panel_source_register(order: int, source: PanelSource) -> None:
    """Add a source; panels show by `order` (idempotent: ready() may run more than once in tests)."""
    if all(existing is not source for _, existing in _sources):
        _sources.append((order, source))
        _sources.sort(key=lambda entry: entry[0])


def candidate_panels(candidate: Candidate, user: Any) -> list[Panel]:
    return [panel for _, source in _sources if (panel := source(candidate, user)) is not None]
