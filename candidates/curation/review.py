"""Curators' decisions on candidates: one, or a batch of the review queue's ticked rows, with the
acknowledgements a flagged, humanly rejected or synthetic candidate needs. The reads (each
candidate's current decision, the approved set, the review queue) are in `selectors.py`.

Decisions are append-only: recording one never changes an earlier one, and a candidate's
current decision is simply its latest (by time, then id). Keeping the history as rows
rather than a status column makes "who decided what, when, and what changed their mind"
a plain query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import transaction

from veriharm_site.refusals import Refused

from ..hooks.flags import candidate_flags, flag_warning
from ..hooks.human_verdicts import HumanMajority, human_majorities, human_warning
from ..models import APPROVE_REASONS, REJECT_REASONS, Candidate, Decision, DecisionReason, Verdict
from ..pool.synthetic import synthetic_ids, synthetic_warning

if TYPE_CHECKING:
    from veriharm_site.accounts.models import User


@dataclass(frozen=True)
class ReasonOption:
    key: int  # the keyboard digit in the review queue
    value: str
    label: str
    for_approve: bool
    for_reject: bool


REASON_OPTIONS: tuple[ReasonOption, ...] = tuple(
    ReasonOption(index, reason.value, reason.label, reason in APPROVE_REASONS, reason in REJECT_REASONS)
    for index, reason in enumerate(DecisionReason, start=1)
)


class DecisionRefused(Refused):
    pass


class FlagsNotAcknowledged(DecisionRefused):
    """An approval of a flagged candidate without the curator confirming its warning."""

    def __init__(self, message: str, flags: list[str]) -> None:
        super().__init__("acknowledge_flags", message)
        self.flags = flags

    def error_extra(self) -> dict[str, list[str]]:
        return {"flags": self.flags}  # the reasons, for a client to show before confirming


class HumanRejectionNotAcknowledged(DecisionRefused):
    """An approval of candidates humans judged invalid without the curator confirming it."""

    def __init__(self, message: str, rejected: dict[str, str]) -> None:
        super().__init__("acknowledge_human_verdict", message)
        self.rejected = rejected

    def error_extra(self) -> dict[str, dict[str, str]]:
        return {"human_rejected": self.rejected}  # per candidate id, the human majority in words


class SyntheticNotAcknowledged(DecisionRefused):
    """An approval of synthetic candidates (`candidates.pool.synthetic`) without the curator confirming it."""

    def __init__(self, message: str, synthetic: list[str]) -> None:
        super().__init__("acknowledge_synthetic", message)
        self.synthetic = synthetic

    def error_extra(self) -> dict[str, list[str]]:
        return {"synthetic": self.synthetic}  # the candidate ids whose judge scores and Q no model produced


def approval_text(reasons: list[str], majority: HumanMajority | None, synthetic: bool = False) -> str:
    """The warning an approval keeps: the reference check's flags, humans' rejection, then that no
    model produced its figures. A page renders it, and the approval is refused if it changed before
    the curator confirmed it."""
    parts = (flag_warning(reasons), human_warning(majority), synthetic_warning(synthetic))
    return " ".join(part for part in parts if part)


def _synthetic_refusal(ids: list[str], outcome: str = "") -> SyntheticNotAcknowledged:
    one = len(ids) == 1
    return SyntheticNotAcknowledged(
        f"no model produced the judge scores and Q of {_listed(ids)}: {'it is' if one else 'they are'} synthetic "
        "(a scripted proposer or judges, or demo data). Approve "
        f"{'it' if one else 'them'} only to try the workflow, and tick the box that says you know{outcome}",
        ids,
    )


def _check_decision(verdict: str, reason: str, note: str) -> None:
    if verdict not in Verdict.values:
        raise DecisionRefused("verdict", f"must be approve or reject, got {verdict!r}")
    if reason not in DecisionReason.values:
        raise DecisionRefused("reason", f"must be one of {', '.join(DecisionReason.values)}, got {reason!r}")
    allowed = APPROVE_REASONS if verdict == Verdict.APPROVE else REJECT_REASONS
    if reason not in allowed:
        label = DecisionReason(reason).label
        raise DecisionRefused("reason", f"“{label}” is not a reason to {verdict}")
    if reason == DecisionReason.OTHER and not note.strip():
        raise DecisionRefused("note", "say why in the note when the reason is “other”")


def decision_record(
    *,
    candidate_id: int,
    user: User,
    verdict: str,
    reason: str,
    note: str = "",
    seen_revision: int | None = None,
    acknowledge_flags: bool = False,
    acknowledge_human_verdict: bool = False,
    acknowledge_synthetic: bool = False,
    warning_seen: str | None = None,
) -> Decision:
    """Record a decision; `seen_revision` is the revision the curator looked at, and a decision
    on text that has been edited since is refused rather than silently applied to the new text.

    Approving a flagged candidate (`candidates.hooks.flags`) needs `acknowledge_flags`, and one humans
    judged invalid (`candidates.hooks.human_verdicts`) `acknowledge_human_verdict`, and a synthetic one
    (`candidates.pool.synthetic`) `acknowledge_synthetic`; the decision then keeps the warning. `warning_seen`, the warning as a page showed it, must be the current one:
    flags or votes that changed since (a reference trial finished, a label came in) are read
    before they are acknowledged.
    """
    note = note.strip()
    _check_decision(verdict, reason, note)
    with transaction.atomic():
        # The lock orders concurrent decisions on one candidate, so "latest" is well defined; the
        # reference check locks the candidate too, so the flags read below are not half-written.
        candidate = Candidate.objects.select_for_update().only("pk", "external_id", "revision").get(pk=candidate_id)
        if seen_revision is not None and seen_revision != candidate.revision:
            raise DecisionRefused(
                "candidate",
                status_code=409,
                message=f"the candidate was edited since you opened it (now revision {candidate.revision}); "
                "read the new text and decide again",
            )
        warning = ""
        if verdict == Verdict.APPROVE:
            reasons = candidate_flags([candidate.pk]).get(candidate.pk, [])
            majority = human_majorities([candidate.pk]).get(candidate.pk)
            synthetic = candidate.pk in synthetic_ids([candidate.pk])
            warning = approval_text(reasons, majority, synthetic)
            if reasons and not acknowledge_flags:
                raise FlagsNotAcknowledged(
                    f"{candidate.external_id} is flagged: {'; '.join(reasons)}. Approve it only if you have "
                    "checked that its tests are right anyway, and tick the box that says you have read the warning",
                    reasons,
                )
            if majority is not None and majority.rejected and not acknowledge_human_verdict:
                raise HumanRejectionNotAcknowledged(
                    f"humans judged {candidate.external_id} invalid ({majority.text}). Approve it only if you "
                    "have checked that it is valid anyway, and tick the box that says you have checked it",
                    {candidate.external_id: majority.text},
                )
            if synthetic and not acknowledge_synthetic:
                raise _synthetic_refusal([candidate.external_id])
            if reasons and warning_seen is not None and warning_seen != warning:
                raise FlagsNotAcknowledged(
                    f"the flags of {candidate.external_id} changed since you opened it; now: {'; '.join(reasons)}. "
                    "Read them and confirm again",
                    reasons,
                )
            if majority is not None and majority.rejected and warning_seen is not None and warning_seen != warning:
                raise HumanRejectionNotAcknowledged(
                    f"the warning on {candidate.external_id} changed since you opened it; now: {warning} "
                    "Read it and confirm again",
                    {candidate.external_id: majority.text},
                )
        decision = _new_decision(candidate, user, verdict, reason, note, warning)
        decision.save()
        return decision


def _new_decision(candidate: Candidate, user: User, verdict: str, reason: str, note: str, warning: str) -> Decision:
    """An unsaved decision on the candidate's current revision (the one its lock was taken on)."""
    return Decision(
        candidate=candidate,
        verdict=verdict,
        reason=reason,
        note=note,
        candidate_revision=candidate.revision,
        decided_by=user,
        flag_warning=warning,
    )


MAX_BULK_DECISIONS = 500  # one page of the queue is far fewer; a batch this size stays one short transaction


class FlaggedInBatch(DecisionRefused):
    """A batch approval that includes flagged candidates without the curator confirming their warnings."""

    def __init__(self, message: str, flagged: dict[str, list[str]]) -> None:
        super().__init__("acknowledge_flags", message)
        self.flagged = flagged

    def error_extra(self) -> dict[str, dict[str, list[str]]]:
        return {"flagged": self.flagged}  # per candidate id, its flags in words


def _listed(ids: list[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


@dataclass(frozen=True)
class BulkPlan:
    """What a batch decision records: its candidates in id order and, for approvals of flagged ones,
    the warning each decision keeps."""

    candidates: list[Candidate]
    warnings: dict[int, str]
    flagged: dict[str, list[str]]  # by candidate id, the flags acknowledged
    human_rejected: dict[str, str] = field(default_factory=dict)  # by candidate id, the majority acknowledged
    synthetic: tuple[str, ...] = ()  # the synthetic candidates' ids, acknowledged


def _bulk_plan(
    external_ids: Sequence[str],
    verdict: str,
    reason: str,
    note: str,
    acknowledge_flags: bool,
    acknowledge_human_verdict: bool,
    acknowledge_synthetic: bool = False,
    *,
    lock: bool,
    seen_revisions: Mapping[str, int] | None = None,
) -> BulkPlan:
    _check_decision(verdict, reason, note)
    wanted = list(dict.fromkeys(external_ids))  # a candidate ticked twice is decided once
    if not wanted:
        raise DecisionRefused("candidates", "choose at least one candidate")
    if len(wanted) > MAX_BULK_DECISIONS:
        raise DecisionRefused(
            "candidates", f"at most {MAX_BULK_DECISIONS} candidates at once, got {len(wanted)}; decide them in parts"
        )
    rows = Candidate.objects.filter(external_id__in=wanted).order_by("pk").only("pk", "external_id", "revision")
    # Locked in id order, as every batch locks them, so two overlapping batches cannot deadlock.
    candidates = list(rows.select_for_update() if lock else rows)
    found = {c.external_id for c in candidates}
    missing = [ext for ext in wanted if ext not in found]
    if missing:
        raise DecisionRefused(
            "candidates",
            f"no candidate has the id{'s' if len(missing) > 1 else ''} {_listed(missing)}; nothing was recorded",
            status_code=404,
        )
    edited = [
        f"{c.external_id} (now revision {c.revision})"
        for c in candidates
        if seen_revisions is not None and seen_revisions.get(c.external_id, c.revision) != c.revision
    ]
    if edited:
        raise DecisionRefused(
            "candidates",
            f"edited since you chose {'it' if len(edited) == 1 else 'them'}: {_listed(edited)}; read the new text "
            "and decide again; nothing was recorded",
            status_code=409,
        )
    if verdict != Verdict.APPROVE:
        return BulkPlan(candidates, {}, {})  # only an approval is warned against
    flags = candidate_flags(c.pk for c in candidates)
    flagged = {c.external_id: flags[c.pk] for c in candidates if c.pk in flags}
    if flagged and not acknowledge_flags:
        raise FlaggedInBatch(
            f"{len(flagged)} of these candidates {'is' if len(flagged) == 1 else 'are'} flagged by the reference "
            f"check: {_listed(sorted(flagged))}. Approve them only if you have checked that their tests are right "
            "anyway, and tick “Approve flagged candidates among them anyway”; nothing was recorded",
            flagged,
        )
    majorities = human_majorities(c.pk for c in candidates)
    rejected = {
        c.external_id: majorities[c.pk].text for c in candidates if c.pk in majorities and majorities[c.pk].rejected
    }
    if rejected and not acknowledge_human_verdict:
        raise HumanRejectionNotAcknowledged(
            f"humans judged {len(rejected)} of these candidates invalid: {_listed(sorted(rejected))}. Approve "
            f"{'it' if len(rejected) == 1 else 'them'} only if you have checked that "
            f"{'it is' if len(rejected) == 1 else 'they are'} valid anyway, and tick “Approve candidates humans judged invalid among them anyway”; "
            "nothing was recorded",
            rejected,
        )
    synthetic = synthetic_ids(c.pk for c in candidates)
    if synthetic and not acknowledge_synthetic:
        raise _synthetic_refusal(
            sorted(c.external_id for c in candidates if c.pk in synthetic), "; nothing was recorded"
        )
    warnings = {c.pk: approval_text(flags.get(c.pk, []), majorities.get(c.pk), c.pk in synthetic) for c in candidates}
    return BulkPlan(
        candidates,
        {pk: text for pk, text in warnings.items() if text},
        flagged,
        rejected,
        tuple(sorted(c.external_id for c in candidates if c.pk in synthetic)),
    )


def decisions_bulk_check(
    *,
    external_ids: Sequence[str],
    verdict: str,
    reason: str,
    note: str = "",
    acknowledge_flags: bool = False,
    acknowledge_human_verdict: bool = False,
    acknowledge_synthetic: bool = False,
) -> BulkPlan:
    """What `decisions_record_bulk` would record now, or its refusal; records nothing (the confirm step)."""
    return _bulk_plan(
        external_ids,
        verdict,
        reason,
        note.strip(),
        acknowledge_flags,
        acknowledge_human_verdict,
        acknowledge_synthetic,
        lock=False,
    )


def decisions_record_bulk(
    *,
    external_ids: Sequence[str],
    user: User,
    verdict: str,
    reason: str,
    note: str = "",
    acknowledge_flags: bool = False,
    acknowledge_human_verdict: bool = False,
    acknowledge_synthetic: bool = False,
    seen_revisions: Mapping[str, int] | None = None,
) -> list[Decision]:
    """One decision, the same for each candidate, all recorded or none.

    `seen_revisions` (candidate id -> revision) are the revisions the curator chose; as for one
    decision, a batch holding a candidate edited since is refused whole (409), naming it. Without
    them each decision applies to the candidate's revision at this moment. Approving flagged
    candidates needs `acknowledge_flags`, and approving ones humans judged invalid
    `acknowledge_human_verdict`, and synthetic ones `acknowledge_synthetic`, as one at a time does;
    without it the whole batch is refused, naming them.
    """
    note = note.strip()
    with transaction.atomic():
        plan = _bulk_plan(
            external_ids,
            verdict,
            reason,
            note,
            acknowledge_flags,
            acknowledge_human_verdict,
            acknowledge_synthetic,
            lock=True,
            seen_revisions=seen_revisions,
        )
        return Decision.objects.bulk_create(
            [_new_decision(c, user, verdict, reason, note, plan.warnings.get(c.pk, "")) for c in plan.candidates]
        )
