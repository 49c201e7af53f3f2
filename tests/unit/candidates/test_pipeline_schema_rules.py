"""The pipeline format's JSON Schema: generated from the models, committed, and agreeing with an
independent validator (jsonschema) on the spec's examples and on invalid lines."""

from __future__ import annotations

import copy
import json

import pytest
from django.core.management import call_command
from jsonschema import Draft202012Validator

from candidates.pipeline import format as fmt
from candidates.pipeline.schema import SCHEMA_PATH, schema_text
from tests.conftest import EXAMPLES

COMMITTED = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (EXAMPLES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _validator() -> Draft202012Validator:
    Draft202012Validator.check_schema(COMMITTED)
    return Draft202012Validator(COMMITTED)


def _import_errors(line: dict) -> list[fmt.FormatError]:
    return fmt.parse(fmt.iter_lines([json.dumps(line)], "line.jsonl")).errors


def test_the_committed_schema_is_the_one_the_models_generate():
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "docs/pipeline-format.schema.json is behind the models: run manage.py pipeline_schema -o "
        "docs/pipeline-format.schema.json"
    )


def test_the_spec_examples_are_valid_for_the_schema_and_the_import():
    validator = _validator()
    lines = _lines("candidates.jsonl") + _lines("search.jsonl") + _lines("candidates_with_twins.jsonl")
    assert {line["kind"] for line in lines} == {"candidate", "search"}
    for line in lines:
        assert list(validator.iter_errors(line)) == [], line.get("id") or line.get("source_task_id")
        assert _import_errors(line) == []


def _with(line: dict, path: tuple, value) -> dict:
    line = copy.deepcopy(line)
    target = line
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return line


CANDIDATE_CHANGES = [
    (("colour",), "blue", "colour"),
    (("harm_test",), KeyError, "harm_test"),
    (("instruction",), "   ", "instruction"),
    (("instruction",), 42, "instruction"),
    (("id",), "has spaces", "id"),
    (("perturbation",), "typo_injection", "perturbation"),
    (("provenance", "iteration"), 21, "provenance.iteration"),
    (("provenance", "iteration"), True, "provenance.iteration"),
    (("judgements", 0, "scores", "harm_feasibility"), 0, "judgements[0].scores.harm_feasibility"),
    (("judgements", 0, "scores", "surprise"), 3, "judgements[0].scores.surprise"),
    (("source_task", "environment", "network"), "yes", "source_task.environment.network"),
    (("source_task", "environment", "workdir"), "app", "source_task.environment.workdir"),
    (("risk_category",), "r" * 101, "risk_category"),
    (("references", "safe"), None, "references.safe"),
    (("extra",), [], "extra"),
]


@pytest.mark.parametrize(
    ("path", "value", "field"), CANDIDATE_CHANGES, ids=[c[2] + "=" + repr(c[1])[:12] for c in CANDIDATE_CHANGES]
)
def test_an_invalid_candidate_is_refused_by_both(path, value, field):
    line = _with(_lines("candidates.jsonl")[0], path, value)
    assert list(_validator().iter_errors(line)), "the schema accepts it"
    errors = _import_errors(line)
    assert [(e.location.line, e.field) for e in errors] == [(1, field)]


SEARCH_CHANGES = [
    (("budget",), 0, "budget"),
    (("attempts",), [], "attempts"),
    (("attempts", 0, "task_passed"), "true", "attempts[0].task_passed"),
    (("candidate_id",), "not an id", "candidate_id"),
    (("kind",), "serach", "kind"),
]


@pytest.mark.parametrize(("path", "value", "field"), SEARCH_CHANGES, ids=[c[2] for c in SEARCH_CHANGES])
def test_an_invalid_search_is_refused_by_both(path, value, field):
    line = _with(_lines("search.jsonl")[0], path, value)
    assert list(_validator().iter_errors(line)), "the schema accepts it"
    assert [e.field for e in _import_errors(line)] == [field]


def test_rules_beyond_the_schema_are_still_refused_by_the_import():
    # The schema says these only in words; the import refuses them with the field.
    search = _lines("search.jsonl")[0]
    early = _with(search, ("attempts", 0, "harm_detected"), True)
    assert [e.field for e in _import_errors(early)] == ["attempts[0]"]
    candidate = _lines("candidates.jsonl")[0]
    twice = _with(candidate, ("judgements",), [candidate["judgements"][0]] * 2)
    assert [e.field for e in _import_errors(twice)] == ["judgements"]


def test_the_command_prints_and_writes_the_schema(tmp_path, capsys):
    call_command("pipeline_schema")
    assert json.loads(capsys.readouterr().out) == COMMITTED
    target = tmp_path / "schema.json"
    call_command("pipeline_schema", output=str(target))
    assert json.loads(target.read_text()) == COMMITTED
    call_command("pipeline_schema", check=True)
