"""Curator edits of a candidate's instruction or harm test, kept as numbered revisions.

The candidate row always carries the latest text and its number (`Candidate.revision`), so
everything that reads candidates (ranking, export, evaluation) sees the edit without a join;
the Revision rows keep every earlier text with who changed it and why.

Re-imports after an edit: `Candidate.content_hash` stays the hash of the imported pipeline
line, so importing that same line again is "unchanged" and leaves the edit in place. A line
with other content is a conflict, as for any stored candidate; only the explicit replace
mode overwrites, and then the pipeline's text wins over the edit.

The reads (a candidate's revisions, each with what it changed) are in `selectors.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from veriharm_site.refusals import Refused

from ..diffs.diffing import AddedWords, search_text
from ..models import Candidate, Revision

if TYPE_CHECKING:
    from veriharm_site.accounts.models import User


class RevisionRefused(Refused):
    pass


def _normalise(text: str) -> str:
    # Browsers submit textareas with CRLF; the pipeline's texts use LF.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check_python(source: str) -> None:
    try:
        compile(source, "harm_test.py", "exec")
    except SyntaxError as exc:
        raise RevisionRefused("harm_test", f"is not valid Python: {exc.msg} on line {exc.lineno}") from None


def revision_append(
    candidate: Candidate, *, instruction: str, harm_test: str, reason: str, author: User | None = None
) -> Revision:
    """Record `candidate`'s next revision (the caller holds its row lock and then writes the text and
    number onto the row). Every revision goes through here, a curator's edit or a replacing import."""
    if not Revision.objects.filter(candidate=candidate).exists():
        # Keep the imported text as revision 1 before the first change overwrites it on the row.
        Revision.objects.create(
            candidate=candidate,
            number=1,
            instruction=candidate.instruction,
            harm_test=candidate.harm_test,
            created_at=candidate.imported_at,
        )
    return Revision.objects.create(
        candidate=candidate,
        number=candidate.revision + 1,
        instruction=instruction,
        harm_test=harm_test,
        reason=reason,
        author=author,
    )


def candidate_revise(
    *,
    candidate_id: int,
    user: User,
    instruction: str,
    harm_test: str,
    reason: str,
    base_revision: int,
) -> Revision:
    """Make the edited text the candidate's new revision.

    `base_revision` is the revision the curator edited; if someone else's edit came first the
    second is refused instead of overwriting it unseen.
    """
    instruction, harm_test, reason = _normalise(instruction), _normalise(harm_test), reason.strip()
    if not reason:
        raise RevisionRefused("reason", "say why the text is changed")
    if not instruction.strip():
        raise RevisionRefused("instruction", "must not be empty")
    if not harm_test.strip():
        raise RevisionRefused("harm_test", "must not be empty")
    _check_python(harm_test)
    with transaction.atomic():
        candidate = Candidate.objects.select_for_update().get(pk=candidate_id)
        if base_revision != candidate.revision:
            raise RevisionRefused(
                "candidate",
                status_code=409,
                message=f"revision {candidate.revision} was saved while you edited revision {base_revision}; "
                "start from the current text",
            )
        if instruction == candidate.instruction and harm_test == candidate.harm_test:
            raise RevisionRefused("instruction", "nothing changed: edit the instruction or the harm test")
        revision = revision_append(candidate, instruction=instruction, harm_test=harm_test, reason=reason, author=user)
        candidate.instruction = instruction
        candidate.search_text = search_text(
            candidate.external_id, AddedWords()(candidate.source_task.instruction, instruction)
        )
        candidate.harm_test = harm_test
        candidate.revision = revision.number
        candidate.save(update_fields=["instruction", "search_text", "harm_test", "revision", "updated_at"])
    return revision
