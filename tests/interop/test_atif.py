"""A run's trials exported as ATIF trajectories, checked by Harbor's own models of the format."""

from __future__ import annotations

import json

import pytest
from harbor.models.trajectories import Trajectory as HarborTrajectory

from evaluation.runs.trajectory_export import run_atif_archive
from tests.interop.recorded_runs import STEPS, archive_members, release_run
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
