"""The human verdicts on a candidate, for its page, as a read model (registered in AnnotationConfig.ready)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from candidates.hooks.harm_test_verdicts import HarmTestVerdict, harm_test_verdicts_for
from candidates.hooks.panels import Panel
from candidates.models import Candidate

from ..labelling.criteria import MEASURES
from ..models import Study
from .selectors.results import ItemRow, candidate_item_rows


@dataclass(frozen=True)
class CandidateHumanVerdicts:
    candidate: Candidate
    verdicts: list[tuple[Study, ItemRow]]  # its item row in every study that sampled it
    measures: Any
    harm_tests: HarmTestVerdict | None  # None: this reader may not see evaluations


def candidate_human_verdicts_panel(candidate: Candidate, user: Any) -> Panel:
    harm = harm_test_verdicts_for(user, [candidate.pk])
    return Panel(
        "annotation/_candidate_verdicts.html",
        CandidateHumanVerdicts(
            candidate=candidate,
            verdicts=candidate_item_rows(candidate.pk),
            measures=MEASURES,
            harm_tests=None if harm is None else harm[candidate.pk],
        ),
    )
