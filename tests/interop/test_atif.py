"""A run's trials exported as ATIF trajectories, checked by Harbor's own models of the format, and
brought back through a Harbor job carrying them: the same steps and verdicts."""

from __future__ import annotations

import json

import pytest
from harbor.models.trajectories import Trajectory as HarborTrajectory

from evaluation.imported_runs.readers import read_log
from evaluation.imported_runs.records import LogRefused
from evaluation.imported_runs.services import run_import
from evaluation.models import TranscriptStep
from evaluation.runs.trajectory_export import run_atif_archive
from tests.hostile.seed import table_counts
from tests.interop.recorded_runs import STEPS, archive_members, harbor_job, recorded_steps, release_run
from tests.interop.support import FIRST, SECOND, freeze_examples

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(examples_imported, curator):
    return freeze_examples(curator)


def test_each_trial_is_a_trajectory_harbor_reads_with_its_verdicts_hashes_and_usage(release):
    run = release_run(release)
    files = archive_members(run_atif_archive(run))
    manifest = json.loads(files.pop("manifest.json"))
    trials = {entry["candidate"]: entry for entry in manifest["trials"]}
    assert set(trials) == {FIRST, SECOND} and set(files) == {entry["path"] for entry in trials.values()}
    assert manifest["release_checksum"] == release.checksum

    first = HarborTrajectory.model_validate_json(files[trials[FIRST]["path"]])
    kinds = [(step.source, bool(step.tool_calls)) for step in first.steps]
    assert kinds == [
        ("system", False),
        ("agent", False),
        ("agent", True),
        ("agent", True),
        ("agent", True),
        ("agent", False),
    ]
    rm = first.steps[3]
    assert rm.tool_calls[0].arguments == {"command": "rm x"}
    assert rm.observation.results[0].content == STEPS[3][1]
    assert rm.observation.results[0].extra == {"exit_code": 1, "timed_out": False, "duration": 0.5}
    assert first.steps[5].message == "Done: the workspace is tidy."
    assert (first.final_metrics.total_prompt_tokens, first.final_metrics.total_completion_tokens) == (150, 15)
    assert first.final_metrics.total_cost_usd == pytest.approx(0.0015)
    verdicts = first.extra["veriharm"]
    trial = run.trials.get(candidate__external_id=FIRST)
    assert (verdicts["r_task"], verdicts["r_harm"], verdicts["outcome"]) == (1, 1, trial.outcome)
    assert verdicts["inputs"]["inputs_digest"] == trial.inputs.digest
    assert verdicts["inputs"]["harm_test_sha256"] == trial.inputs.harm_test_sha256
    # No model call went through the gateway for the second trial: no usage is claimed for it.
    second = HarborTrajectory.model_validate_json(files[trials[SECOND]["path"]])
    assert second.final_metrics.total_prompt_tokens is None and second.final_metrics.total_cost_usd is None
    # The same run exports the same bytes.
    assert run_atif_archive(run) == run_atif_archive(run)


def _by_candidate(files: dict[str, bytes]) -> dict[str, bytes]:
    manifest = json.loads(files["manifest.json"])
    return {entry["candidate"]: files[entry["path"]] for entry in manifest["trials"]}


def test_exported_trajectories_come_back_through_a_harbor_job_with_the_same_steps_and_verdicts(release, tmp_path):
    run = release_run(release)
    job = harbor_job(release, _by_candidate(archive_members(run_atif_archive(run))), tmp_path)
    imported = run_import(release.pk, read_log("harbor", job))
    for candidate in (FIRST, SECOND):
        original = run.trials.get(candidate__external_id=candidate)
        back = imported.trials.get(candidate__external_id=candidate)
        assert recorded_steps(back) == recorded_steps(original) == list(STEPS)
        assert (back.r_task, back.r_harm, back.outcome) == (original.r_task, original.r_harm, original.outcome)
        assert back.inputs.digest == original.inputs.digest


def test_a_trial_without_steps_exports_a_marked_step_that_imports_as_none(release, tmp_path):
    run = release_run(release)
    run.trials.get(candidate__external_id=SECOND).steps.all().delete()
    files = archive_members(run_atif_archive(run))
    trajectories = _by_candidate(files)
    assert len(HarborTrajectory.model_validate_json(trajectories[SECOND]).steps) == 1
    imported = run_import(release.pk, read_log("harbor", harbor_job(release, trajectories, tmp_path)))
    assert recorded_steps(imported.trials.get(candidate__external_id=SECOND)) == []


@pytest.mark.parametrize(
    ("spoil", "field"),
    [
        (lambda d: d["steps"][3]["observation"]["results"][0]["extra"].update(exit_code="1"), "exit_code"),
        (lambda d: d["steps"][3]["observation"]["results"][0]["extra"].update(duration=-1), "duration"),
        (lambda d: d["steps"][3]["observation"]["results"][0].update(content=7), "results[0].content"),
        (lambda d: d["steps"][2]["tool_calls"][0].update(tool_call_id="x" * 201), "tool_call_id"),
        (lambda d: d["steps"][0].update(message="m" * 1_000_001), "steps[0].message"),
    ],
)
def test_a_hostile_trajectory_is_refused_naming_its_file_and_field_and_changes_nothing(release, tmp_path, spoil, field):
    run = release_run(release)
    trajectories = _by_candidate(archive_members(run_atif_archive(run)))
    document = json.loads(trajectories[FIRST])
    spoil(document)
    trajectories[FIRST] = json.dumps(document).encode()
    job = harbor_job(release, trajectories, tmp_path)
    before = table_counts()
    with pytest.raises(LogRefused) as refused:
        run_import(release.pk, read_log("harbor", job))
    message = refused.value.message
    assert "agent/trajectory.json: steps[" in message and field in message, message
    assert table_counts() == before


def test_only_the_recorded_attempt_of_each_current_trial_is_exported(release):
    run = release_run(release, {1: {"attempts": 2}})
    second = run.trials.get(candidate__external_id=SECOND)
    TranscriptStep.objects.create(trial=second, attempt=2, index=0, kind="message", content="The second attempt.")
    trajectories = _by_candidate(archive_members(run_atif_archive(run)))
    steps = HarborTrajectory.model_validate_json(trajectories[SECOND]).steps
    assert [step.message for step in steps] == ["The second attempt."]
    assert len(HarborTrajectory.model_validate_json(trajectories[FIRST]).steps) == len(STEPS)
