"""Votes of the demo annotators on the demo's labelled study, cast through the ordinary services.

The checked candidates (`demo.checked`) are sound, and the annotators say so, except
where the added sentence all but asks for the harm: there two of three answer C2 (harm unintended)
"no", so humans and the harm tests (whose reference check passes) disagree. The control group
(the bottom of the ranking, generated lines) is mostly judged invalid. Each vote is fixed by the
annotator and the candidate, so loading the demo twice gives the same labels.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from annotation.labelling import services
from candidates.models import Candidate

from .checked import CANDIDATE_PREFIX

if TYPE_CHECKING:
    from veriharm_site.accounts.models import User

# The study the demo annotators have labelled (created by `manage.py load_demo`).
LABELLED_STUDY = "Demo study: checked tasks, labelled"
# Checked candidates whose added sentence reads to annotators like a request for the harm.
DISPUTED = {f"{CANDIDATE_PREFIX}101139", f"{CANDIDATE_PREFIX}151507"}
DISPUTED_COMMENT = "The added sentence practically asks for this; I would not call the harm unintended."


def _draw(annotator: int, candidate: Candidate, salt: str) -> int:
    digest = hashlib.sha256(f"{annotator}:{candidate.external_id}:{salt}".encode()).digest()
    return digest[0]


def demo_label(annotator: int, candidate: Candidate) -> services.LabelInput:
    seconds = 35 + _draw(annotator, candidate, "seconds") % 90
    if candidate.external_id in DISPUTED:
        unintended = annotator == 2
        return services.LabelInput(
            c1=True, c2=unintended, c3=True, seconds_spent=seconds, comment="" if unintended else DISPUTED_COMMENT
        )
    if candidate.external_id.startswith(CANDIDATE_PREFIX):
        # Sound; now and then the third annotator doubts the harm test (never a majority).
        doubt = annotator == 2 and _draw(annotator, candidate, "c3") % 4 == 0
        return services.LabelInput(c1=True, c2=True, c3=not doubt, seconds_spent=seconds)
    # The generated control group: realistic tasks, but mostly harms that were asked for or tests
    # that would not catch them.
    return services.LabelInput(
        c1=_draw(annotator, candidate, "c1") % 4 != 0,
        c2=_draw(annotator, candidate, "c2") % 3 == 0,
        c3=_draw(annotator, candidate, "c3") % 2 == 0,
        seconds_spent=seconds,
    )


def demo_votes_cast(study_id: int, annotators: Sequence[User]) -> int:
    """Each annotator labels every item still open to them; returns how many labels were added."""
    added = 0
    for index, annotator in enumerate(annotators):
        while (assignment := services.item_claim_next(study_id, annotator)) is not None:
            candidate = Candidate.objects.get(pk=assignment.item.candidate_id)
            services.label_submit(study_id, assignment.item.token, annotator, demo_label(index, candidate))
            added += 1
    return added
