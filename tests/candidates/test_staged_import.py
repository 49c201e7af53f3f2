"""The PostgreSQL import through its staging table: the rules that span lines, the ranking it writes,
and the same results as the in-memory import everywhere else."""

from __future__ import annotations

import random

import pytest

from candidates.models import Candidate, Judgement, SourceTask
from candidates.services import ImportRefused
from tests.factories import CandidateLineFactory, jsonl, with_judges
from tests.importing import candidate_import_streams

pytestmark = pytest.mark.django_db


def _import(*lines, name: str = "in.jsonl", replace: bool = False):
    return candidate_import_streams([(name, jsonl(*lines).splitlines(keepends=True))], replace=replace)


def _refused(*lines, name: str = "in.jsonl") -> list[tuple[int, str, str]]:
    before = (Candidate.objects.count(), Judgement.objects.count(), SourceTask.objects.count())
    with pytest.raises(ImportRefused) as refused:
        _import(*lines, name=name)
    assert (Candidate.objects.count(), Judgement.objects.count(), SourceTask.objects.count()) == before
    return [(e.location.line, e.field, e.message) for e in refused.value.errors]


def _expected_ranks() -> list[tuple[str, int | None]]:
    """The ranking by its definition: Q descending, then the id in code-point order; no Q, no rank."""
    rows = list(Candidate.objects.values_list("external_id", "quality"))
    ranked = sorted((r for r in rows if r[1] is not None), key=lambda r: (-r[1], r[0]))
    expected = {ext: position for position, (ext, _) in enumerate(ranked, start=1)}
    return sorted((ext, expected.get(ext)) for ext, _ in rows)


def _stored_ranks() -> list[tuple[str, int | None]]:
    return sorted(Candidate.objects.values_list("external_id", "rank"))


def test_a_line_repeated_identically_counts_once():
    line = CandidateLineFactory(id="twice")
    summary = _import(line, CandidateLineFactory(id="once"), line)
    assert summary.created == 2
    assert Judgement.objects.filter(candidate__external_id="twice").count() == 1


def test_an_id_repeated_with_other_content_is_refused_naming_both_lines():
    first = CandidateLineFactory(id="dup")
    errors = _refused(first, CandidateLineFactory(), dict(first, instruction="Something else entirely."))
    assert errors == [(3, "id", "candidate 'dup' appears with other content at in.jsonl, line 1")]


def test_bad_lines_and_repeated_ids_are_reported_together_in_line_order():
    first = CandidateLineFactory(id="dup")
    errors = _refused(
        first,
        dict(CandidateLineFactory(), perturbation="nope"),
        dict(first, harm_summary="other"),
        dict(CandidateLineFactory(), colour="red"),
    )
    assert [(line, field) for line, field, _ in errors] == [(2, "perturbation"), (3, "id"), (4, "colour")]


def test_ranks_written_by_successive_imports_follow_the_definition():
    rng = random.Random(7)
    # Ids whose code-point order differs from a natural-language collation: case, '-', '.', '_'.
    ids = ["a-b", "a.b", "a_b", "A-b", "ab", "a/b", "Z9", "z9", "0x", "a:b"]

    def lines(prefix: str, count: int):
        out = []
        for i in range(count):
            line = CandidateLineFactory(id=f"{prefix}{ids[i % len(ids)]}{i // len(ids)}")
            if i % 7 == 3:
                line["judgements"] = []  # no judges: no Q, no rank
            else:
                line = with_judges(
                    line, *[tuple(rng.randint(1, 5) for _ in range(5)) for _ in range(rng.randint(1, 3))]
                )
            out.append(line)
        return out

    _import(*lines("", 25))
    assert _stored_ranks() == _expected_ranks()
    # A second import interleaves with the stored ranking: stored ranks move, new rows come in ranked.
    _import(*lines("m", 25))
    assert _stored_ranks() == _expected_ranks()
    assert Candidate.objects.filter(rank__isnull=True).count() == 8


def test_a_replacing_import_reranks_with_the_new_q():
    low, high = CandidateLineFactory(id="low"), CandidateLineFactory(id="high")
    _import(with_judges(low, (2, 2, 2, 2, 2)), with_judges(high, (5, 5, 5, 5, 5)))
    assert _stored_ranks() == [("high", 1), ("low", 2)]
    summary = _import(with_judges(low, (5, 5, 5, 5, 5), (5, 5, 5, 5, 5)), replace=True)
    assert (summary.created, summary.replaced) == (0, 1)
    assert _stored_ranks() == [("high", 1), ("low", 2)]  # a tie on Q: the id decides
    _import(with_judges(high, (1, 1, 1, 1, 1)), replace=True)
    assert _stored_ranks() == [("high", 2), ("low", 1)]
    assert Judgement.objects.filter(candidate__external_id="low").count() == 2


def test_the_judgements_arrive_in_their_order_with_their_scores():
    line = with_judges(CandidateLineFactory(id="judged"), (1, 2, 3, 4, 5), (5, 4, 3, 2, 1))
    line["judgements"][1]["rationale"] = "second opinion"
    _import(line)
    stored = list(
        Judgement.objects.filter(candidate__external_id="judged")
        .order_by("position")
        .values_list("judge", "position", "harm_test_correctness", "perturbation_stealth", "rationale")
    )
    assert stored == [("judge-1", 0, 1, 5, ""), ("judge-2", 1, 5, 1, "second opinion")]
    assert Candidate.objects.get(external_id="judged").quality == 15.0


def test_a_bad_last_line_leaves_nothing_of_the_lines_before_it():
    good = [CandidateLineFactory() for _ in range(40)]
    errors = _refused(*good, dict(CandidateLineFactory(), extra={"seed": float("nan")}))
    assert errors == [(41, "", "NaN is not valid JSON")]
    assert not Candidate.objects.filter(external_id__in=[line["id"] for line in good]).exists()


def test_a_line_pydantic_refuses_is_named_by_its_line_and_field_among_good_ones():
    errors = _refused(CandidateLineFactory(), dict(CandidateLineFactory(), judgements=[{"judge": "j"}]))
    assert errors == [(2, "judgements[0].scores", "is required")]
