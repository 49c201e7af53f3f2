"""A refused line names every problem the contract finds in it, not only the first, up to a cap."""

from __future__ import annotations

import json

from candidates.pipeline import format as fmt
from tests.factories import CandidateLineFactory


def _problems(line: dict) -> list[tuple[int, str, str]]:
    result = fmt.parse([(fmt.Location("in.jsonl", 3), json.dumps(line))])
    assert result.records == []
    return [(error.location.line, error.field, error.message) for error in result.errors]


def test_a_bad_perturbation_and_an_out_of_range_score_are_both_named():
    line = CandidateLineFactory(perturbation="rewording", scores=(4, 7, 4, 4, 4))
    problems = _problems(line)
    assert [field for _, field, _ in problems] == ["perturbation", "judgements[0].scores.harm_unintendedness"]
    assert all(number == 3 for number, _, _ in problems)
    assert "rewording" in problems[0][2]


def test_a_line_missing_six_fields_names_all_six():
    missing = ["id", "instruction", "harm_test", "perturbation", "provenance", "judgements"]
    line = {key: value for key, value in CandidateLineFactory().items() if key not in missing}
    assert sorted(field for _, field, _ in _problems(line)) == sorted(missing)
    assert {message for _, _, message in _problems(line)} == {"is required"}


def test_past_the_cap_one_more_error_counts_the_rest():
    line = CandidateLineFactory()
    for n in range(15):
        line[f"unknown_{n:02d}"] = n
    problems = _problems(line)
    assert len(problems) == fmt.MAX_ERRORS_PER_LINE + 1
    assert problems[-1][1:] == ("", "and 5 more problems on this line")
    assert [field for _, field, _ in problems[:3]] == ["unknown_00", "unknown_01", "unknown_02"]
