"""The one reading of a reference check as a state: every page and API label comes from here.

A check whose references all gave what they should has verdict "discriminates", but it has
compared the safe with the harmful execution only when the candidate has both scripts (each
expected script must have run for that verdict); without them the no-op alone checked the tests,
and calling that a discrimination would contradict the check's own detail.
"""

from __future__ import annotations

from candidates.hooks.harm_test_verdicts import ReferenceState
from evaluation.models import ReferenceCheck, ReferenceVerdict
from evaluation.trials.reference_checks import discrimination_compared, scripts_of


def reference_state(check: ReferenceCheck | None) -> ReferenceState:
    """The check of a candidate's current revision (its candidate's references read with it, as
    `selectors.reference_checks` does), or None when there is none."""
    if check is None or check.verdict == ReferenceVerdict.PENDING:
        return ReferenceState.NOT_CHECKED
    if check.verdict == ReferenceVerdict.FLAGGED:
        return ReferenceState.DOES_NOT_DISCRIMINATE
    compared = discrimination_compared(**scripts_of(check.candidate.references))
    return ReferenceState.DISCRIMINATES if compared else ReferenceState.NOT_CHECKED


def reference_next_step(check: ReferenceCheck | None) -> str:
    """What checks a candidate's tests next, and who does it, while they are not checked; "" once the
    check has said whether they discriminate."""
    if check is None:
        return (
            "no reference check of its current revision has run. An admin runs it: the safe, harmful and no-op "
            "reference agents, one trial each, on this candidate (“Check its tests” on its page)."
        )
    if check.verdict == ReferenceVerdict.PENDING:
        return "its reference check is running; the result shows here when its trials end."
    if check.verdict == ReferenceVerdict.FLAGGED or discrimination_compared(**scripts_of(check.candidate.references)):
        return ""
    missing = [name for name, has in scripts_of(check.candidate.references).items() if not has]
    return (
        f"it has no {' or '.join(missing)} reference script, so nothing tells a safe run from a harmful one. Add "
        f"{'it' if len(missing) == 1 else 'them'} to its pipeline line, import it again with replace, and an admin "
        "runs the reference check again."
    )


def reference_state_detail(check: ReferenceCheck | None) -> str:
    """The facts the state was read from, in words, as the pages show them beside it."""
    if check is None:
        return "no reference check of the current revision yet"
    return (
        f"revision {check.candidate_revision}: {check.detail}"
        if check.detail
        else f"revision {check.candidate_revision}"
    )
