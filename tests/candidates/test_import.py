"""Importing pipeline output: the contract, all-or-nothing, idempotence, conflicts, round trip."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from candidates.models import Candidate, Judgement, Search, SearchAttempt, SourceTask
from candidates.pipeline import format as fmt
from candidates.services import ImportRefused, candidate_import_files
from tests.conftest import EXAMPLES
from tests.factories import CandidateLineFactory, jsonl
from tests.importing import candidate_import_streams

pytestmark = pytest.mark.django_db


def db_state() -> dict[str, list]:
    """Everything an import writes, in a comparable form."""
    return {
        "tasks": list(
            SourceTask.objects.order_by("external_id").values_list(
                "external_id", "instruction", "task_test", "environment"
            )
        ),
        "candidates": list(
            Candidate.objects.order_by("external_id").values_list(
                "external_id",
                "source_task__external_id",
                "instruction",
                "harm_test",
                "perturbation",
                "target_agent",
                "proposer",
                "iteration",
                "harm_summary",
                "risk_category",
                "references",
                "twin",
                "extra",
                "quality",
                "rank",
            )
        ),
        "judgements": list(
            Judgement.objects.order_by("candidate__external_id", "position").values_list(
                "candidate__external_id",
                "judge",
                "position",
                "harm_test_correctness",
                "harm_unintendedness",
                "harm_test_correspondence",
                "harm_feasibility",
                "perturbation_stealth",
                "rationale",
            )
        ),
        "searches": list(
            Search.objects.order_by("source_task_external_id", "target_agent", "proposer").values_list(
                "source_task_external_id", "target_agent", "proposer", "budget", "candidate__external_id", "succeeded"
            )
        ),
        "attempts": list(
            SearchAttempt.objects.order_by(
                "search__source_task_external_id", "search__target_agent", "iteration"
            ).values_list(
                "search__source_task_external_id",
                "search__target_agent",
                "search__proposer",
                "iteration",
                "task_passed",
                "harm_detected",
            )
        ),
    }


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_the_example_files_import(examples_imported):
    assert examples_imported.created == 2 and examples_imported.searches_created == 3
    firmware = Candidate.objects.get(external_id="bb-187101/gpt-5.4-mini/claude-opus-4-7")
    assert firmware.source_task.environment["files"]["firmware.bin"].startswith("FWIMG-v2.3")
    assert firmware.references.keys() == {"safe", "harmful"}
    assert Judgement.objects.filter(candidate=firmware).count() == 2
    failed = Search.objects.get(source_task_external_id="bashbench-187101", target_agent="kimi-k2.5")
    assert failed.succeeded is False and failed.candidate is None and failed.attempts.count() == 5


def test_identical_reimport_changes_nothing(examples_imported):
    before = db_state()
    summary = candidate_import_files([str(EXAMPLES / "candidates.jsonl"), str(EXAMPLES / "search.jsonl")])
    assert (summary.created, summary.unchanged, summary.replaced) == (0, 2, 0)
    assert summary.searches_unchanged == 3
    assert db_state() == before


def _refused(lines_text: str, name: str = "bad.jsonl") -> list[fmt.FormatError]:
    before = db_state()
    with pytest.raises(ImportRefused) as refused:
        candidate_import_streams([(name, lines_text.splitlines(keepends=True))])
    assert db_state() == before, "a refused import must change nothing"
    return refused.value.errors


def _with(line: dict, path: str, value) -> dict:
    line = copy.deepcopy(line)
    *parents, last = path.split(".")
    target = line
    for key in parents:
        target = target[key] if not key.isdigit() else target[int(key)]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return line


@pytest.mark.parametrize(
    ("path", "value", "field", "words"),
    [
        ("harm_test", KeyError, "harm_test", "is required"),
        ("source_task.task_test", KeyError, "source_task.task_test", "is required"),
        ("colour", "blue", "colour", "unknown field"),
        ("provenance.seed", 3, "provenance.seed", "unknown field"),
        ("judgements.0.scores.harm_feasibility", 6, "judgements[0].scores.harm_feasibility", "from 1 to 5"),
        ("judgements.0.scores.harm_feasibility", 0, "judgements[0].scores.harm_feasibility", "from 1 to 5"),
        ("perturbation", "typo_injection", "perturbation", "must be one of"),
        ("provenance.iteration", 21, "provenance.iteration", "from 1 to 20"),
        ("id", "has spaces in it", "id", "characters"),
    ],
)
def test_each_kind_of_invalid_line_is_refused_with_its_line_named(examples_imported, path, value, field, words):
    good = CandidateLineFactory()
    bad = _with(CandidateLineFactory(), path, value)
    errors = _refused(jsonl(good, bad))
    assert [(e.location.file, e.location.line, e.field) for e in errors] == [("bad.jsonl", 2, field)]
    assert words in errors[0].message
    assert not Candidate.objects.filter(external_id=good["id"]).exists()


def test_malformed_json_is_refused_with_its_line(examples_imported):
    good = CandidateLineFactory()
    errors = _refused(jsonl(good) + '{"kind": "candidate", "id": \n')
    assert errors[0].location.line == 2 and "malformed JSON" in errors[0].message


def test_a_conflicting_source_task_is_refused(examples_imported):
    stored = json.loads((EXAMPLES / "candidates.jsonl").read_text().splitlines()[0])
    line = CandidateLineFactory()
    line["source_task"] = dict(stored["source_task"], instruction="A different seed task under the same id")
    errors = _refused(jsonl(CandidateLineFactory(), line))
    assert (errors[0].location.line, errors[0].field) == (2, "source_task")
    assert "conflicts with the stored source task" in errors[0].message


def test_a_conflicting_source_task_within_one_file_is_refused(db):
    first = CandidateLineFactory(task_index=3)
    second = CandidateLineFactory(task_index=3)
    second["source_task"]["task_test"] = "def test_other():\n    pass\n"
    errors = _refused(jsonl(first, second))
    assert (errors[0].location.line, errors[0].field) == (2, "source_task")


def test_a_conflicting_candidate_id_is_refused_unless_replacing(examples_imported):
    line = json.loads((EXAMPLES / "candidates.jsonl").read_text().splitlines()[0])
    line["harm_summary"] = "A changed summary"
    errors = _refused(jsonl(CandidateLineFactory(), line))
    assert (errors[0].location.line, errors[0].field) == (2, "id")
    assert "already stored with other content" in errors[0].message

    pk = Candidate.objects.get(external_id=line["id"]).pk
    summary = candidate_import_streams([("fix.jsonl", jsonl(line).splitlines())], replace=True)
    assert (summary.created, summary.replaced) == (0, 1)
    replaced = Candidate.objects.get(external_id=line["id"])
    assert replaced.pk == pk and replaced.harm_summary == "A changed summary"


def test_a_search_whose_candidate_is_missing_is_refused(examples_imported):
    search = {
        "kind": "search",
        "source_task_id": "bashbench-319395",
        "target_agent": "qwen3-coder",
        "proposer": "gpt-5.5",
        "budget": 5,
        "attempts": [{"iteration": 1, "task_passed": True, "harm_detected": True}],
        "candidate_id": "no-such-candidate",
    }
    errors = _refused(jsonl(CandidateLineFactory(), search))
    assert (errors[0].location.line, errors[0].field) == (2, "candidate_id")
    assert "neither in this import nor stored" in errors[0].message


def test_search_rules_are_checked(db):
    base = {
        "kind": "search",
        "source_task_id": "bashbench-1",
        "target_agent": "a",
        "proposer": "p",
        "budget": 2,
        "attempts": [
            {"iteration": 1, "task_passed": True, "harm_detected": True},
            {"iteration": 2, "task_passed": True, "harm_detected": True},
        ],
        "candidate_id": "x",
    }
    errors = _refused(jsonl(base))
    assert errors[0].field == "attempts[0]" and "before the last attempt" in errors[0].message
    no_candidate = dict(
        base, attempts=[{"iteration": 1, "task_passed": True, "harm_detected": True}], candidate_id=None
    )
    assert _refused(jsonl(no_candidate))[0].field == "candidate_id"
    over_budget = dict(base, budget=1)
    assert _refused(jsonl(over_budget))[0].field == "attempts"


def test_every_bad_line_is_reported_not_just_the_first(db):
    lines = [
        CandidateLineFactory(),
        _with(CandidateLineFactory(), "perturbation", "x"),
        CandidateLineFactory(),
        _with(CandidateLineFactory(), "instruction", KeyError),
    ]
    errors = _refused(jsonl(*lines))
    assert [e.location.line for e in errors] == [2, 4]


def test_export_then_import_round_trips(examples_imported, tmp_path):
    candidate_import_streams([("more.jsonl", jsonl(*[CandidateLineFactory() for _ in range(5)]).splitlines())])
    before = db_state()
    exported = tmp_path / "export.jsonl"
    call_command("export_pipeline", output=str(exported))
    # Into an empty database: the same content.
    Search.objects.all().delete()
    Candidate.objects.all().delete()
    SourceTask.objects.all().delete()
    call_command("import_pipeline", str(exported), no_progress=True)
    assert db_state() == before
    # And into the same database: nothing changes.
    call_command("import_pipeline", str(exported), no_progress=True)
    assert db_state() == before


def test_the_command_reports_a_summary_and_refuses_with_the_line(db, tmp_path, capsys):
    good = write(tmp_path, "good.jsonl", jsonl(CandidateLineFactory(), CandidateLineFactory()))
    call_command("import_pipeline", good, no_progress=True)
    assert "2 created, 0 unchanged, 0 replaced" in capsys.readouterr().out
    bad = write(tmp_path, "bad.jsonl", jsonl(_with(CandidateLineFactory(), "judgements.0.scores.harm_feasibility", 9)))
    with pytest.raises(CommandError, match=r"bad.jsonl, line 1, field 'judgements\[0\].scores.harm_feasibility'"):
        call_command("import_pipeline", bad, no_progress=True)
    assert Candidate.objects.count() == 2


def test_a_replacing_import_keeps_a_curators_edit_in_the_history(examples_imported, curator):
    from candidates.curation.revisions import candidate_revise
    from candidates.models import Revision

    line = json.loads((EXAMPLES / "candidates.jsonl").read_text().splitlines()[0])
    candidate = Candidate.objects.get(external_id=line["id"])
    candidate_revise(
        candidate_id=candidate.pk,
        user=curator,
        instruction=candidate.instruction + "\nBe careful.",
        harm_test=candidate.harm_test,
        reason="clarify",
        base_revision=1,
    )
    line["instruction"] = "A new text from the pipeline."
    candidate_import_streams([("new.jsonl", jsonl(line).splitlines())], replace=True)
    candidate.refresh_from_db()
    assert candidate.revision == 3 and candidate.instruction == "A new text from the pipeline."
    history = list(Revision.objects.filter(candidate=candidate).order_by("number").values_list("number", "reason"))
    assert history == [(1, ""), (2, "clarify"), (3, "Replaced by an import of new.jsonl, line 1")]
    assert Revision.objects.get(candidate=candidate, number=2).instruction.endswith("Be careful.")


def test_a_line_that_is_not_utf8_is_refused_with_its_line(db):
    good = jsonl(CandidateLineFactory()).encode()
    errors = _refused_bytes(good + b'{"kind": "candidate", "id": "caf\xe9"}\n')
    assert [(e.location.line, e.message) for e in errors] == [(2, "is not valid UTF-8 (byte 33)")]


def _refused_bytes(data: bytes) -> list[fmt.FormatError]:
    before = db_state()
    with pytest.raises(ImportRefused) as refused:
        candidate_import_streams([("bytes.jsonl", data.splitlines(keepends=True))])
    assert db_state() == before
    return refused.value.errors


def test_a_group_size_below_one_is_refused_naming_k(examples_imported, curator_client):
    refused = curator_client.get("/api/candidates/?k=-5")
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "k"
    data = curator_client.get("/api/candidates/?k=1").json()
    assert [row["group"] for row in data["results"]] == ["top", "bottom"]
