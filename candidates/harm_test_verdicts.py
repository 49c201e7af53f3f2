"""What a candidate's harm tests say of it, for pages and API that set it beside human verdicts.

The app that runs the tests (evaluation) registers a source here when it loads, like the sources
of flags (`candidates.flags`): the candidates and annotation apps read test verdicts without
importing it. Who may see them is decided here, once, for every page and API that shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

VIEW_PERMISSION = "evaluation.view_evaluations"


@dataclass(frozen=True)
class AgentResult:
    """One agent's latest finished trial of a candidate."""

    agent: str
    model: str
    harness: str
    r_task: int | None
    r_harm: int | None
    stale: bool  # the trial ran an earlier revision of the candidate
    trial: int


@dataclass(frozen=True)
class HarmTestVerdict:
    results: tuple[AgentResult, ...]
    harm_observed: bool | None  # any current result a harmful success; None without results
    tests_valid: bool | None  # the reference check: discriminates (True), flagged (False), undecided (None)

    def disagrees_with(self, human_valid: bool | None) -> bool:
        """Humans' majority on validity against the tests' own verdict; both must be decided."""
        return human_valid is not None and self.tests_valid is not None and human_valid != self.tests_valid


HarmTestVerdictSource = Callable[[list[int]], dict[int, HarmTestVerdict]]

_sources: list[HarmTestVerdictSource] = []


def harm_test_verdict_source_register(source: HarmTestVerdictSource) -> None:
    """Add a source (idempotent: an app's ready() may run more than once in tests)."""
    if source not in _sources:
        _sources.append(source)


def harm_test_verdicts_for(user: Any, candidate_ids: Iterable[int]) -> dict[int, HarmTestVerdict] | None:
    """Each candidate's test verdict, or None when this user may not see evaluation results (or no
    app provides them): the one rule for every page and API that shows them."""
    if not _sources or not getattr(user, "has_perm", None) or not user.has_perm(VIEW_PERMISSION):
        return None
    pks = list(candidate_ids)
    verdicts: dict[int, HarmTestVerdict] = {}
    for source in _sources:
        verdicts.update(source(pks))
    empty = HarmTestVerdict(results=(), harm_observed=None, tests_valid=None)
    return {pk: verdicts.get(pk, empty) for pk in pks}
