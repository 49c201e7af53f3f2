"""The human majority on candidates, for `candidates.hooks.human_verdicts` (registered in AnnotationConfig.ready)."""

from __future__ import annotations

from candidates.hooks.human_verdicts import HumanMajority, StudyOption

from ..models import Study, StudyItem
from .selectors.results import candidates_item_rows


def candidates_human_majorities(candidate_ids: list[int]) -> dict[int, HumanMajority]:
    """Each labelled candidate's Valid in its latest study that decided one (an adjudication replaces
    the majority), else in its latest study with labels; the same queries for one candidate or many."""
    found: dict[int, HumanMajority] = {}
    for study, row in candidates_item_rows(candidate_ids):  # newest study first
        if not row.labels:
            continue
        known = found.get(row.candidate_pk)
        if known is not None and (known.valid is not None or row.final("valid") is None):
            continue  # a newer study decided, or this older one does not either
        found[row.candidate_pk] = HumanMajority(
            valid=row.final("valid"),
            votes_valid=row.yes("valid"),
            votes=len(row.labels),
            study=study.name,
            adjudicated=row.adjudication is not None,
            earlier_revision=row.edited_since_sampling,
        )
    return found


def studies_for_filter() -> list[StudyOption]:
    """Every study, newest first: the review queue's filter by study (`candidates.hooks.human_verdicts`)."""
    return [
        StudyOption(pk, name) for pk, name in Study.objects.order_by("-created_at", "-id").values_list("pk", "name")
    ]


def study_candidates(study_id: int) -> list[int] | None:
    """The candidates a study sampled; None when no study has this id."""
    if not Study.objects.filter(pk=study_id).exists():
        return None
    return list(StudyItem.objects.filter(study_id=study_id).values_list("candidate_id", flat=True))
