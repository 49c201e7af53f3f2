"""Synthetic candidates: those whose judge scores and Q no model produced, named once.

A candidate is synthetic when a scripted stand-in made its figures instead of a model: the lines
`manage.py load_demo` generates, and the candidates a generation run keeps when its proposer or any
of its judges is scripted (`evaluation.generation.recording` marks them, whoever launched the run).
The mark is the stored `Candidate.demo` flag, kept by re-imports. Every page that shows such a
candidate's figures says so, and approving one or freezing a release that holds one needs an
acknowledgement, which the decision or the release keeps.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from ..models import Candidate

# Said beside a synthetic candidate's figures: on its page, in the queue, the ranking and the releases.
CANDIDATE_TEXT = "Synthetic: no model produced its judge scores and Q (a scripted proposer or judges, or demo data)"


def synthetic_candidates() -> QuerySet[Candidate]:
    return Candidate.objects.filter(demo=True)


def synthetic_count() -> int:
    """How many candidates of the pool are synthetic, for the pages that show the pool to say so."""
    return synthetic_candidates().count()


def synthetic_ids(candidate_ids: Iterable[int]) -> set[int]:
    """The synthetic ones among these candidates."""
    pks = list(candidate_ids)
    if not pks:
        return set()
    return set(synthetic_candidates().filter(pk__in=pks).values_list("pk", flat=True))


def synthetic_warning(synthetic: bool) -> str:
    """The warning a curator acknowledges before approving a synthetic candidate; a Decision keeps it."""
    return "Synthetic: no model produced its judge scores and Q." if synthetic else ""


def candidates_mark_synthetic(external_ids: Iterable[str]) -> int:
    """Mark these candidates synthetic; how many are marked now. Idempotent."""
    return Candidate.objects.filter(external_id__in=list(external_ids), demo=False).update(demo=True)
