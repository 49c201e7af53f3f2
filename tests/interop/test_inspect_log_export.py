"""A run exported as an Inspect eval log: read by Inspect's own `read_eval_log`, and imported back
through the Inspect log import with the same steps and verdicts."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

from evaluation.imported_runs.readers import read_log
from evaluation.imported_runs.records import LogRefused
from evaluation.imported_runs.services import run_import
from evaluation.runs.inspect_log_export import log_name, run_inspect_log
from tests.factories import AgentFactory, TrialFactory
from tests.hostile.seed import table_counts
from tests.interop.recorded_runs import STEPS, recorded_steps, release_run
from tests.interop.support import FIRST, SECOND, freeze_examples
from veriharm_site.refusals import Refused

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(examples_imported, curator):
    return freeze_examples(curator)


def test_inspect_reads_the_log_one_sample_per_trial_with_messages_tool_calls_and_scores(release, tmp_path):
    run = release_run(release)
    path = tmp_path / log_name(run)
    path.write_bytes(run_inspect_log(run))
    log = read_eval_log(str(path))
    assert log.status == "success" and log.eval.metadata["veriharm_release"]["checksum"] == release.checksum
    assert any("harness notes" in line for line in log.eval.metadata["veriharm_export"]["not_in_events"])
    samples = {sample.id: sample for sample in log.samples}
    assert set(samples) == {FIRST, SECOND}
    first = samples[FIRST]
    trial = run.trials.get(candidate__external_id=FIRST)
    assert [m.role for m in first.messages] == ["user", "assistant", "assistant", "tool", "assistant", "tool"] + [
        "assistant",
        "tool",
        "assistant",
    ]
    assert first.messages[0].text == trial.inputs.instruction
    assert first.messages[2].tool_calls[0].function == "bash"
    assert first.messages[2].tool_calls[0].arguments == {"cmd": "ls"}
    assert (
        first.messages[3].text == STEPS[2][1] and first.messages[3].tool_call_id == first.messages[2].tool_calls[0].id
    )
    assert first.messages[5].metadata == {"exit_code": 1, "timed_out": False, "duration": 0.5}
    assert first.scores["veriharm_scorer"].value == {"task": 1, "harm": 1}
    assert first.metadata["veriharm_notes"] == [{"index": 0, "content": STEPS[0][1]}]
    assert first.metadata["inputs_digest"] == trial.inputs.digest
    usage = first.model_usage["gpt-test"]
    assert (usage.input_tokens, usage.output_tokens, usage.total_cost) == (150, 15, pytest.approx(0.0015))
    assert samples[SECOND].model_usage == {}
    # The sample list Inspect's viewer shows first, without reading the samples.
    summaries = read_eval_log_sample_summaries(str(path))
    assert {(s.id, s.epoch, s.scores["veriharm_scorer"].value["harm"]) for s in summaries} == {
        (FIRST, 1, 1),
        (SECOND, 1, 0),
    }
    assert run_inspect_log(run) == run_inspect_log(run)


def test_the_exported_log_imports_back_with_the_same_steps_and_verdicts(release, tmp_path):
    run = release_run(release)
    path = tmp_path / log_name(run)
    path.write_bytes(run_inspect_log(run))
    imported = run_import(release.pk, read_log("inspect", path))
    for candidate in (FIRST, SECOND):
        original = run.trials.get(candidate__external_id=candidate)
        back = imported.trials.get(candidate__external_id=candidate)
        assert recorded_steps(back) == recorded_steps(original) == list(STEPS)
        assert (back.r_task, back.r_harm, back.outcome) == (original.r_task, original.r_harm, original.outcome)
        assert back.inputs.digest == original.inputs.digest


def test_a_run_of_two_agents_is_refused_as_one_log(release):
    run = release_run(release)
    other = AgentFactory(name="other")
    TrialFactory(run=run, agent=other, candidate=run.trials.first().candidate, status="done")
    with pytest.raises(Refused, match="ran 2 agents"):
        run_inspect_log(run)


def test_a_log_with_hostile_notes_or_tool_metadata_is_refused_naming_the_field_and_changes_nothing(release, tmp_path):
    run = release_run(release)
    original = zipfile.ZipFile(io.BytesIO(run_inspect_log(run)))
    member = f"samples/{FIRST}_epoch_1.json"
    sample = json.loads(original.read(member))
    sample["metadata"]["veriharm_notes"][0]["index"] = "0"
    sample["messages"][5]["metadata"]["exit_code"] = 1.5
    spoiled = io.BytesIO()
    with zipfile.ZipFile(spoiled, "w") as archive:
        for name in original.namelist():
            archive.writestr(name, json.dumps(sample) if name == member else original.read(name))
    path = tmp_path / "spoiled.eval"
    path.write_bytes(spoiled.getvalue())
    before = table_counts()
    with pytest.raises(LogRefused) as refused:
        run_import(release.pk, read_log("inspect", path))
    message = refused.value.message
    assert "metadata.veriharm_notes[0].index" in message and "messages[5].metadata.exit_code" in message, message
    assert table_counts() == before


def test_a_trial_without_a_verdict_comes_back_without_one_and_an_imported_run_exports_its_logs_usage(release, tmp_path):
    no_verdict = {"status": "unresolved", "r_task": None, "r_harm": None, "task_exit_code": 0, "harm_exit_code": 5}
    run = release_run(release, {1: no_verdict})
    assert run.trials.get(candidate__external_id=SECOND).end == "test_error"
    path = tmp_path / log_name(run)
    path.write_bytes(run_inspect_log(run))
    imported = run_import(release.pk, read_log("inspect", path))
    back = imported.trials.get(candidate__external_id=SECOND)
    assert (back.status, back.end, back.r_task, back.r_harm) == ("unresolved", "test_error", None, None)
    assert "V_harm did not run to a verdict (exit 5)" in back.outcome_reason

    again = tmp_path / "again.eval"
    again.write_bytes(run_inspect_log(imported))
    usage = {s.id: s.model_usage for s in read_eval_log(str(again)).samples}
    assert usage[FIRST]["gpt-test"].input_tokens == 150 and usage[SECOND] == {}
