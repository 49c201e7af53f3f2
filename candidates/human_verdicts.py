"""What blind annotators concluded of a candidate, for the pages and services that approve and freeze.

The candidates app never imports annotation, which registers a source in `candidates.hooks` when it
loads (`AppConfig.ready`), as the sources of flags (`candidates.flags`) and harm-test verdicts do. A
source takes candidate pks and returns, for each candidate some study labelled, the human
majority of its latest study with a decided Valid (an adjudication replaces the majority).
Approving or freezing a candidate humans judged invalid needs an acknowledgement, which the
decision or the release keeps (`candidates.curation.review`, `candidates.releases.services`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Registered through candidates.hooks; named here too for the apps that register through this module.
from .hooks import HumanMajority, StudyOption, human_majority_sources, human_study_sources

# Human majorities are study results: shown to those who may read them.
VIEW_PERMISSION = "annotation.view_results"


def human_majorities(candidate_ids: Iterable[int]) -> dict[int, HumanMajority]:
    """The human majority of each labelled candidate among these; candidates no study labelled are absent.
    For the services' guards, whoever asks."""
    pks = list(candidate_ids)
    majorities: dict[int, HumanMajority] = {}
    if not pks:
        return majorities
    for source in human_majority_sources():
        majorities.update(source(pks))
    return majorities


def human_majorities_visible(user: Any) -> bool:
    """Whether this reader may see human majorities: the one rule for every page and API."""
    return bool(getattr(user, "has_perm", None)) and user.has_perm(VIEW_PERMISSION)


def human_majorities_for(user: Any, candidate_ids: Iterable[int]) -> dict[int, HumanMajority] | None:
    """`human_majorities` for a page or API, or None for a reader who may not see study results."""
    return human_majorities(candidate_ids) if human_majorities_visible(user) else None


# The studies and their candidates, registered by annotation as the majority source is: the review
# queue filters by study, and a run may evaluate a study's items (`evaluation.runs.selection`).

# What the queue may filter by: each candidate's human majority, or none yet.
HUMAN_STATES = ("valid", "invalid", "undecided", "unlabelled")


def human_studies() -> list[StudyOption]:
    """Every study, newest first, for the queue's filter."""
    return [study for listing, _ in human_study_sources() for study in listing()]


def study_candidate_ids(study_id: int) -> set[int] | None:
    """The candidates a study sampled; None when no study has this id."""
    found = study_candidates_in_order(study_id)
    return None if found is None else set(found)


def study_candidates_in_order(study_id: int) -> list[int] | None:
    """The candidates a study sampled, in its items' order (what a run of the study evaluates); None
    when no study has this id."""
    for _, members in human_study_sources():
        found = members(study_id)
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
