"""The review queue's strip: one cell per candidate of the top-K, in rank order, coloured by its
current decision and linking to its review page. K may be in the thousands, so every cell's text
is made here once and the template writes one small link per cell."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .selectors import ReviewQueue


@dataclass(frozen=True)
class StripCell:
    href: str
    state: str  # "approve", "reject" or "none" (undecided): the cell's CSS class
    title: str  # its tooltip, and its name for screen readers
    current: bool  # the candidate the review page shows


def queue_strip(queue: ReviewQueue, review_url: Callable[[int], str], current: int = 0) -> tuple[StripCell, ...]:
    """The cells of `queue`; `review_url(rank)` is the review page of a rank, `current` the rank shown
    (0: none)."""
    return tuple(
        StripCell(
            href=review_url(e.rank),
            state=e.verdict or "none",
            title=f"rank {e.rank} · {e.external_id} · {e.verdict or 'undecided'}{' · flagged' if e.flags else ''}",
            current=e.rank == current,
        )
        for e in queue.entries
    )
