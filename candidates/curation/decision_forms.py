"""A decision form, as the review page and the candidate page post it, handed to the service: its
refusal lands on the form field it names, so both pages show it where the curator looks."""

from __future__ import annotations

from typing import Any

from django import forms

from ..models import Candidate, Decision, Verdict
from . import review
from .forms import DecisionForm


def field_of(form: forms.Form, name: str) -> str | None:
    """The form field a refusal names, or None (the form's own errors) when it has no such field."""
    return name if name in form.fields else None


def decision_from_form(form: DecisionForm, candidate: Candidate, user: Any) -> Decision | None:
    """The recorded decision, or None with the reasons on `form` (nothing recorded)."""
    if not form.is_valid():
        return None
    data = form.cleaned_data
    if data["candidate"] != candidate.external_id:
        form.add_error(None, "the ranking changed since you opened this page (a new import); review again")
        return None
    try:
        return review.decision_record(
            candidate_id=candidate.pk,
            user=user,
            verdict=data["verdict"],
            reason=data["reason"],
            note=data["note"],
            seen_revision=data["revision"],
            acknowledge_flags=data["acknowledge_flags"],
            acknowledge_human_verdict=data["acknowledge_human_verdict"],
            acknowledge_synthetic=data["acknowledge_synthetic"],
            warning_seen=data["warning_seen"],
        )
    except review.DecisionRefused as refused:
        form.add_error(field_of(form, refused.field), refused.message)
        return None


def decided_message(decision: Decision, candidate: Candidate, where: str = "") -> str:
    done = "Approved" if decision.verdict == Verdict.APPROVE else "Rejected"
    despite = [
        words
        for marker, words in (
            ("Flagged:", "its flags"),
            ("Humans judged it invalid", "humans' rejection"),
            ("Synthetic:", "its synthetic figures"),
        )
        if marker in decision.flag_warning
    ]
    warned = f" despite {' and '.join(despite)}" if despite else ""
    return f"{done} {candidate.external_id}{where}{warned}."
