"""The decision and revision panel shown on a candidate's page and in the review queue."""
from __future__ import annotations

from typing import Any

from django import template

from candidates.models import Candidate, DecisionReason
from candidates.curation.review import decision_history
from candidates.curation.revisions import revision_history

register = template.Library()


@register.inclusion_tag("candidates/review_panel.html", takes_context=True)
def curation_panel(context: template.Context, candidate: Candidate) -> dict[str, Any]:
    decisions = decision_history(candidate.pk)
    return {
        "candidate": candidate,
        "can": context.get("can", {}),
        "current": decisions[0] if decisions else None,
        "decisions": decisions,
        "revisions": revision_history(candidate.pk),
        "reason_labels": dict(DecisionReason.choices),
    }
