"""Where the apps built on candidates plug into it: every registry, and the data each hook carries.

The candidates app never imports annotation or evaluation (they are built on it). What they add to
its pages and rules they register here when they load (`AppConfig.ready`); the modules that read
through a hook ask for its sources here and decide, once, who may see what they return:

- flags against approving a candidate, in words (`candidates.flags`): evaluation's failed
  reference checks;
- each candidate's human majority, and the studies with their candidates (`candidates.human_verdicts`):
  annotation's; approving and freezing guard against a human "invalid", the review queue filters
  by study, and a run may evaluate a study's items;
- each candidate's harm-test verdict and reference state (`candidates.harm_test_verdicts`):
  evaluation's, beside the human verdicts;
- panels on a candidate's page (`candidates.panels`): annotation's human verdicts, evaluation's
  results and the generation search that kept it;
- what the ranking page offers for its filter and ticked rows (`candidates.ranking_actions`):
  annotation's new study.

Every register function is idempotent: an app's ready() may run more than once in tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .models import Candidate

# --- Flags ---------------------------------------------------------------------------------------

# Candidate pks -> for each flagged one, its reasons in words.
FlagSource = Callable[[list[int]], dict[int, list[str]]]

_flag_sources: list[FlagSource] = []


def flag_source_register(source: FlagSource) -> None:
    if source not in _flag_sources:
        _flag_sources.append(source)


def flag_sources() -> list[FlagSource]:
    return list(_flag_sources)


# --- Human verdicts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class HumanMajority:
    valid: bool | None  # Valid_agg (or the adjudicated Valid); None: a tie, or too few labels yet
    votes_valid: int
    votes: int
    study: str
    adjudicated: bool = False
    earlier_revision: bool = False  # the candidate was edited after the study sampled it

    @property
    def rejected(self) -> bool:
        return self.valid is False

    @property
    def verdict(self) -> str:
        return {True: "valid", False: "invalid", None: "undecided"}[self.valid]

    @property
    def votes_text(self) -> str:
        """ "0 of 3 votes valid (study “Pilot”)" """
        how = "adjudicated; " if self.adjudicated else ""
        when = ", on an earlier revision" if self.earlier_revision else ""
        return f"{how}{self.votes_valid} of {self.votes} votes valid (study “{self.study}”{when})"

    @property
    def text(self) -> str:
        """ "invalid, 0 of 3 votes valid (study “Pilot”)" """
        return f"{self.verdict}, {self.votes_text}"


# Candidate pks -> for each candidate some study labelled, the human majority of its latest study
# with a decided Valid (an adjudication replaces the majority).
HumanMajoritySource = Callable[[list[int]], dict[int, HumanMajority]]

_human_majority_sources: list[HumanMajoritySource] = []


def human_majority_source_register(source: HumanMajoritySource) -> None:
    if source not in _human_majority_sources:
        _human_majority_sources.append(source)


def human_majority_sources() -> list[HumanMajoritySource]:
    return list(_human_majority_sources)


@dataclass(frozen=True)
class StudyOption:
    id: int
    name: str


StudyListing = Callable[[], list[StudyOption]]  # every study, newest first
StudyMembers = Callable[[int], "list[int] | None"]  # a study's candidate pks in item order; None: no such study

_study_sources: list[tuple[StudyListing, StudyMembers]] = []


def human_study_source_register(listing: StudyListing, members: StudyMembers) -> None:
    if all(existing is not listing for existing, _ in _study_sources):
        _study_sources.append((listing, members))


def human_study_sources() -> list[tuple[StudyListing, StudyMembers]]:
    return list(_study_sources)


# --- Harm-test verdicts --------------------------------------------------------------------------


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

_harm_test_verdict_sources: list[HarmTestVerdictSource] = []
_reference_state_sources: list[ReferenceStateSource] = []


def harm_test_verdict_source_register(source: HarmTestVerdictSource) -> None:
    if source not in _harm_test_verdict_sources:
        _harm_test_verdict_sources.append(source)


def harm_test_verdict_sources() -> list[HarmTestVerdictSource]:
    return list(_harm_test_verdict_sources)


def reference_state_source_register(source: ReferenceStateSource) -> None:
    if source not in _reference_state_sources:
        _reference_state_sources.append(source)


def reference_state_sources() -> list[ReferenceStateSource]:
    return list(_reference_state_sources)


# --- Panels on a candidate's page ----------------------------------------------------------------


@dataclass(frozen=True)
class Panel:
    template: str  # rendered with the read model's fields as its context
    data: Any  # a frozen dataclass

    def fields(self) -> dict[str, Any]:
        return {f.name: getattr(self.data, f.name) for f in dataclasses.fields(self.data)}


# The candidate and the reader -> its panel (template and frozen read model, built and
# permission-gated by the source), or None when this reader sees nothing of it.
PanelSource = Callable[[Candidate, Any], "Panel | None"]

_panel_sources: list[tuple[int, PanelSource]] = []


def panel_source_register(order: int, source: PanelSource) -> None:
    """Add a source; panels show by `order`."""
    if all(existing is not source for _, existing in _panel_sources):
        _panel_sources.append((order, source))
        _panel_sources.sort(key=lambda entry: entry[0])


def panel_sources() -> list[PanelSource]:
    """The sources in their order."""
    return [source for _, source in _panel_sources]


# --- What the ranking page offers ----------------------------------------------------------------


@dataclass(frozen=True)
class RankingAction:
    permission: str  # the page offers it only to those who hold it (its own view checks again)
    filter_label: str
    # The ranking's query string (its filters, without the page) -> where the filter goes.
    filter_url: Callable[[str], str]
    rows_label: str
    # A GET form's action: the ticked rows go as `candidates` (their ids), with `rows_fields`.
    rows_url: Callable[[], str]
    rows_fields: dict[str, str] = field(default_factory=dict)


_ranking_actions: list[RankingAction] = []


def ranking_action_register(action: RankingAction) -> None:
    if action not in _ranking_actions:
        _ranking_actions.append(action)


def ranking_actions() -> list[RankingAction]:
    return list(_ranking_actions)
