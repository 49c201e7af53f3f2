"""Panels that the apps built on candidates add to a candidate's page, as read models: the hook
and its read.

The candidates app never imports those apps: each registers a source here when it loads
(`AppConfig.ready`). A source takes the candidate and the reader and returns a `Panel` (its
template and a frozen read model, built and permission-gated by the source), or None when this
reader sees nothing of it. The page's view asks for them; templates only render what it got.
Sources that show the same facts read them once per page through `panel_read`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from veriharm_site.registries import Registry

from ..models import Candidate


@dataclass(frozen=True)
class Panel:
    template: str  # rendered with the read model's fields as its context
    data: Any  # a frozen dataclass

    def fields(self) -> dict[str, Any]:
        return {f.name: getattr(self.data, f.name) for f in dataclasses.fields(self.data)}


# The candidate and the reader -> its panel (template and frozen read model, built and
# permission-gated by the source), or None when this reader sees nothing of it.
PanelSource = Callable[[Candidate, Any], "Panel | None"]

# Panels show in the `order` each source is registered with.
PANEL_SOURCES: Registry[PanelSource] = Registry()


# What the panels of one page have read so far; None outside `candidate_panels`.
_page_reads: ContextVar[dict[Hashable, Any] | None] = ContextVar("candidate_panel_reads", default=None)


def panel_read[T](key: Hashable, read: Callable[[], T]) -> T:
    """`read()`, once per page: panels of different apps that show the same facts (e.g. each agent's
    latest result) share one query. Outside `candidate_panels` it simply reads, so nothing outlives
    the page being built."""
    reads = _page_reads.get()
    if reads is None:
        return read()
    if key not in reads:
        reads[key] = read()
    return reads[key]


@contextmanager
def shared_page_reads() -> Iterator[None]:
    """One scope of `panel_read` for a whole page: its panels and the page's own reads of the same
    facts (the reference state beside the decision form) share their queries. Nested scopes join
    the outer one."""
    if _page_reads.get() is not None:
        yield
        return
    token = _page_reads.set({})
    try:
        yield
    finally:
        _page_reads.reset(token)


def candidate_panels(candidate: Candidate, user: Any) -> list[Panel]:
    with shared_page_reads():
        return [panel for source in PANEL_SOURCES if (panel := source(candidate, user)) is not None]
