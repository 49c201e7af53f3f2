"""What a candidate's harm tests say of it, for pages and API that set it beside human verdicts.

The app that runs the tests (evaluation) registers a source in `candidates.hooks` when it loads,
like the sources of flags (`candidates.flags`): the candidates and annotation apps read test
verdicts without importing it. Who may see them is decided here, once, for every page and API that shows them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Registered through candidates.hooks; named here too for the apps that register through this module.
from .hooks import HarmTestVerdict, ReferenceState, harm_test_verdict_sources, reference_state_sources

VIEW_PERMISSION = "evaluation.view_evaluations"


def harm_test_verdicts_for(user: Any, candidate_ids: Iterable[int]) -> dict[int, HarmTestVerdict] | None:
    """Each candidate's test verdict, or None when this user may not see evaluation results (or no
    app provides them): the one rule for every page and API that shows them."""
    sources = harm_test_verdict_sources()
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
    sources = reference_state_sources()
    if not sources or not getattr(user, "has_perm", None) or not user.has_perm(VIEW_PERMISSION):
        return None
    pks = list(candidate_ids)
    states: dict[int, ReferenceState] = {}
    for source in sources:
        states.update(source(pks))
    return {pk: states.get(pk, ReferenceState.NOT_CHECKED) for pk in pks}
