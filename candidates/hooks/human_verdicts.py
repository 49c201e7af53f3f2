"""What blind annotators concluded of a candidate, for the pages and services that approve and
freeze: the hook and its reads.

The candidates app never imports annotation, which registers a source here when it loads
(`AppConfig.ready`), as the sources of flags (`candidates.hooks.flags`) and harm-test verdicts do.
A source takes candidate pks and returns, for each candidate some study labelled, the human
majority of its latest study with a decided Valid (an adjudication replaces the majority).
Approving or freezing a candidate humans judged invalid needs an acknowledgement, which the
decision or the release keeps (`candidates.curation.review`, `candidates.releases.services`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from veriharm_site.registries import Registry


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

HUMAN_MAJORITY_SOURCES: Registry[HumanMajoritySource] = Registry()


@dataclass(frozen=True)
class StudyOption:
    id: int
    name: str


StudyListing = Callable[[], list[StudyOption]]  # every study, newest first
StudyMembers = Callable[[int], "list[int] | None"]  # a study's candidate pks in item order; None: no such study


@dataclass(frozen=True)
class StudySource:
    listing: StudyListing
    members: StudyMembers


STUDY_SOURCES: Registry[StudySource] = Registry()


# Human majorities are study results: shown to those who may read them.
VIEW_PERMISSION = "annotation.view_results"


def human_majorities(candidate_ids: Iterable[int]) -> dict[int, HumanMajority]:
    """The human majority of each labelled candidate among these; candidates no study labelled are absent.
    For the services' guards, whoever asks."""
    pks = list(candidate_ids)
    majorities: dict[int, HumanMajority] = {}
    if not pks:
        return majorities
    for source in HUMAN_MAJORITY_SOURCES:
        majorities.update(source(pks))
    return majorities


def human_majorities_visible(user: Any) -> bool:
    """Whether this reader may see human majorities: the one rule for every page and API."""
    return bool(getattr(user, "has_perm", None)) and user.has_perm(VIEW_PERMISSION)


def human_majorities_for(user: Any, candidate_ids: Iterable[int]) -> dict[int, HumanMajority] | None:
    """`human_majorities` for a page or API, or None for a reader who may not see study results."""
    return human_majorities(candidate_ids) if human_majorities_visible(user) else None


# The studies and their candidates, read through their hook: the review queue filters by study, and
# a run may evaluate a study's items (`evaluation.runs.selection`).

# What the queue may filter by: each candidate's human majority, or none yet.
HUMAN_STATES = ("valid", "invalid", "undecided", "unlabelled")


def human_studies() -> list[StudyOption]:
    """Every study, newest first, for the queue's filter."""
    return [study for source in STUDY_SOURCES for study in source.listing()]


def study_candidate_ids(study_id: int) -> set[int] | None:
    """The candidates a study sampled; None when no study has this id."""
    found = study_candidates_in_order(study_id)
    return None if found is None else set(found)


def study_candidates_in_order(study_id: int) -> list[int] | None:
    """The candidates a study sampled, in its items' order (what a run of the study evaluates); None
    when no study has this id."""
    for source in STUDY_SOURCES:
        found = source.members(study_id)
        if found is not None:
            return list(found)
    return None


def human_state(majority: HumanMajority | None) -> str:
    """One of HUMAN_STATES."""
    return "unlabelled" if majority is None else majority.verdict


def human_warning(majority: HumanMajority | None) -> str:
    """The warning a curator acknowledges before approving or freezing a candidate humans judged invalid."""
    if majority is None or not majority.rejected:
        return ""
    return f"Humans judged it invalid: {majority.votes_text}."
