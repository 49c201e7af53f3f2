"""The generation panel of a candidate's page: the search that kept it, when one did (registered in
EvaluationConfig.ready; the candidates app asks through its panel hook, never importing this)."""

from __future__ import annotations

from typing import Any

from candidates.hooks.panels import Panel
from candidates.models import Candidate

from .selectors import candidate_search

# Search provenance is for those who may see the ranking; annotators never.
READ_PERMISSION = "candidates.view_ranking"


def candidate_generation_panel(candidate: Candidate, user: Any) -> Panel | None:
    if not user.has_perm(READ_PERMISSION):
        return None
    found = candidate_search(candidate.external_id)
    if found is None:
        return None
    return Panel("evaluation/generation/_candidate_panel.html", found)
