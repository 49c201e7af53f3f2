"""What a candidate's harm tests say of it, for pages and API that set it beside human verdicts:
the hook, the data it carries, and its reads.

The app that runs the tests (evaluation) registers a source here when it loads, like the sources
of flags (`candidates.hooks.flags`): the candidates and annotation apps read test verdicts without
importing it. Who may see them is decided here, once, for every page and API that shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from veriharm_site.registries import Registry


class ReferenceState(StrEnum):
    """What the reference check established about a candidate's tests, named apart so that no page
    calls a check that could not compare safe with harmful a discrimination. Decided once, by
    `evaluation.results.reference_state.reference_state`; every page and API renders this."""

    DISCRIMINATES = "discriminates"  # checked: safe (1, 0), harmful (1, 1), no-op (0, 0)
    DOES_NOT_DISCRIMINATE = "does_not_discriminate"  # checked: a reference gave what it should not
    NOT_CHECKED = "not_checked"  # no result yet, one missing, or no safe and harmful script to compare

    @property
    def label(self) -> str:
        return _STATE_LABELS[self]

    @property
    def tests_valid(self) -> bool | None:
        """The tests' verdict on themselves, set beside humans' Valid: None unless checked."""
        return {self.DISCRIMINATES: True, self.DOES_NOT_DISCRIMINATE: False}.get(self)


# The states as an API choice set (the schema names it ReferenceStateEnum: ENUM_NAME_OVERRIDES).
REFERENCE_STATES: tuple[str, ...] = tuple(state.value for state in ReferenceState)


_STATE_LABELS = {
    ReferenceState.DISCRIMINATES: "Tests discriminate",
    ReferenceState.DOES_NOT_DISCRIMINATE: "Tests do not discriminate",
    ReferenceState.NOT_CHECKED: "Discrimination not checked",
}


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
    reference: ReferenceState
    reference_detail: str  # the facts the state was read from, in words
    # While not checked: what checks the tests next and who does it, in words ("" otherwise).
    reference_next_step: str = ""

    @property
    def tests_valid(self) -> bool | None:
        return self.reference.tests_valid

    def disagrees_with(self, human_valid: bool | None) -> bool:
        """Humans' majority on validity against the tests' own verdict; both must be decided, so a
        check that did not compare safe with harmful never disagrees."""
        return human_valid is not None and self.tests_valid is not None and human_valid != self.tests_valid


HarmTestVerdictSource = Callable[[list[int]], dict[int, HarmTestVerdict]]
# The reference state alone (one query, for lists of many candidates).
ReferenceStateSource = Callable[[list[int]], dict[int, ReferenceState]]

HARM_TEST_VERDICT_SOURCES: Registry[HarmTestVerdictSource] = Registry()
REFERENCE_STATE_SOURCES: Registry[ReferenceStateSource] = Registry()


VIEW_PERMISSION = "evaluation.view_evaluations"


def harm_test_verdicts_for(user: Any, candidate_ids: Iterable[int]) -> dict[int, HarmTestVerdict] | None:
    """Each candidate's test verdict, or None when this user may not see evaluation results (or no
    app provides them): the one rule for every page and API that shows them."""
    sources = list(HARM_TEST_VERDICT_SOURCES)
    if not sources or not getattr(user, "has_perm", None) or not user.has_perm(VIEW_PERMISSION):
        return None
    pks = list(candidate_ids)
    verdicts: dict[int, HarmTestVerdict] = {}
    for source in sources:
        verdicts.update(source(pks))
    empty = HarmTestVerdict(
        results=(), harm_observed=None, reference=ReferenceState.NOT_CHECKED, reference_detail="no reference check yet"
    )
    return {pk: verdicts.get(pk, empty) for pk in pks}


def reference_states_for(user: Any, candidate_ids: Iterable[int]) -> dict[int, ReferenceState] | None:
    """Each candidate's reference state, or None for a reader who may not see evaluations (the rule of
    `harm_test_verdicts_for`); a candidate never checked is NOT_CHECKED."""
    sources = list(REFERENCE_STATE_SOURCES)
    if not sources or not getattr(user, "has_perm", None) or not user.has_perm(VIEW_PERMISSION):
        return None
    pks = list(candidate_ids)
    states: dict[int, ReferenceState] = {}
    for source in sources:
        states.update(source(pks))
    return {pk: states.get(pk, ReferenceState.NOT_CHECKED) for pk in pks}
