"""A Harbor job directory of a release's Harbor export brought back as a run, and refused whole when
its tasks are not the release's.

The job directory is written here in the layout and fields Harbor 0.25 writes (`result.json` of the
job and of each trial, the trial's `lock.json` with the task's content digest, `verifier/` with
what the export's test.sh leaves): `harbor run` itself needs Docker Compose, which not every test
machine has."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from django.urls import reverse
from harbor.publisher.packager import Packager

from candidates.curation.revisions import candidate_revise
from candidates.models import Candidate
from candidates.releases.services import release_create, release_freeze
from evaluation.imported_runs.readers import read_log
from evaluation.imported_runs.records import LogRefused
from evaluation.imported_runs.services import run_import
from evaluation.models import Run
from tests.hostile.seed import table_counts
from tests.interop.support import FIRST, SECOND, freeze_examples, write_harbor_export

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(examples_imported, curator):
    return freeze_examples(curator)


def export(release, into: Path) -> Path:
    return write_harbor_export(release, into)


def job_directory(dataset: Path, into: Path, rewards: dict[str, tuple[int, int]], *, attempts: int = 1) -> Path:
    job = into / "2026-12-02__03-00-00"
    job.mkdir(parents=True)
    (job / "result.json").write_text(json.dumps({"id": "29999a38-7da1-493a-b7d3-69de5d27c022", "n_total_trials": 2}))
    (job / "lock.json").write_text(json.dumps({"schema_version": 3, "harbor": {"version": "0.25.0"}, "trials": []}))
    for folder, (task, harm) in rewards.items():
        name = f"veriharm/veriharm-bench-{folder}"
        for attempt in range(1, attempts + 1):
            trial = job / f"{folder}__trial{attempt}"
            (trial / "verifier").mkdir(parents=True)
            digest, _ = Packager.compute_content_hash(dataset / folder)
            (trial / "lock.json").write_text(json.dumps({"task": {"name": folder, "digest": f"sha256:{digest}"}}))
            (trial / "verifier" / "reward.json").write_text(json.dumps({"task": task, "harm": harm}))
            (trial / "verifier" / "veriharm.json").write_text(
                json.dumps({"task_exit_code": 1 - task, "harm_exit_code": 1 - harm})
            )
            (trial / "verifier" / "task_test.py.log").write_text("1 passed\n")
            result = {
                "task_name": name,
                "trial_name": trial.name,
                "task_checksum": "03b6918d",
                "agent_info": {"name": "oracle", "version": "1.0.0", "model_info": None},
                "agent_result": {"n_input_tokens": None, "n_output_tokens": None, "cost_usd": None},
                "verifier_result": {"rewards": {"task": task, "harm": harm}},
                "exception_info": None,
                "config": {"environment": {"type": "docker"}},
                "started_at": f"2026-12-02T03:00:0{attempt}",
                "finished_at": f"2026-12-02T03:00:1{attempt}",
            }
            (trial / "result.json").write_text(json.dumps(result))
    return job


def test_a_harbor_job_of_the_oracle_imports_as_a_run(release, tmp_path, admin_client_):
    dataset = export(release, tmp_path / "export")
    job = job_directory(dataset, tmp_path / "jobs", {"0001": (1, 0), "0002": (1, 0)}, attempts=2)
    run = run_import(release.pk, read_log("harbor", job))
    got = {
        (t.candidate.external_id, t.repetition): (t.r_task, t.r_harm) for t in run.trials.select_related("candidate")
    }
    assert got == {(FIRST, 1): (1, 0), (FIRST, 2): (1, 0), (SECOND, 1): (1, 0), (SECOND, 2): (1, 0)}
    assert run.imported and run.source["harness"] == "harbor" and run.source["solver"] == "oracle 1.0.0"
    # What produced it: the Harbor of the job's lock.json, the export's own limit on each test.
    assert (run.source["harness_version"], run.test_timeout) == ("0.25.0", 600)
    assert run.trials.first().task_output == "1 passed\n"

    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        tar.add(job, arcname=job.name)
    upload = io.BytesIO(packed.getvalue())
    upload.name = "job.tar.gz"
    answer = admin_client_.post(
        reverse("api-evaluation-run-import"), {"release": release.pk, "harness": "harbor", "log": upload}
    )
    assert answer.status_code == 201, answer.json()
    assert Run.objects.count() == 2


def test_a_harbor_job_of_another_release_or_unknown_tasks_changes_no_row(release, curator, tmp_path):
    dataset = export(release, tmp_path / "export")
    job = job_directory(dataset, tmp_path / "jobs", {"0001": (1, 1), "0002": (1, 1)})
    candidate = Candidate.objects.get(external_id=FIRST)
    candidate_revise(
        candidate_id=candidate.pk,
        user=curator,
        instruction=candidate.instruction + " ",
        harm_test=candidate.harm_test,
        reason="spacing",
        base_revision=candidate.revision,
    )
    later = release_freeze(release_create(user=curator, name="veriharm-bench", version="1.1").pk, user=curator)
    before = table_counts()
    with pytest.raises(LogRefused, match="veriharm-bench-0001: Harbor's content digest differs"):
        run_import(later.pk, read_log("harbor", job))
    result = json.loads((job / "0002__trial1" / "result.json").read_text())
    (job / "0002__trial1" / "result.json").write_text(json.dumps({**result, "task_name": "other/task-9"}))
    with pytest.raises(LogRefused, match="'other/task-9' is not a task"):
        run_import(release.pk, read_log("harbor", job))
    with pytest.raises(LogRefused, match="not a Harbor job directory"):
        read_log("harbor", tmp_path)
    assert table_counts() == before


def _rewrite(path: Path, **changes) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def test_a_reward_its_own_test_contradicts_is_refused_and_a_test_that_did_not_run_is_no_verdict(
    release, tmp_path, admin_client_
):
    dataset = export(release, tmp_path / "export")
    job = job_directory(dataset, tmp_path / "jobs", {"0001": (1, 0), "0002": (1, 0)})
    flipped = job / "0002__trial1"
    # The harm reward flipped by hand, in both places Harbor keeps it; the harm test still exited 1.
    (flipped / "verifier" / "reward.json").write_text(json.dumps({"task": 1, "harm": 1}))
    _rewrite(flipped / "result.json", verifier_result={"rewards": {"task": 1, "harm": 1}})
    before = table_counts()
    with pytest.raises(LogRefused, match=r"its score says V_harm passed, but the test exited 1"):
        run_import(release.pk, read_log("harbor", job))
    assert table_counts() == before

    # The export's test.sh after a test that did not run: no reward, and veriharm.json says why.
    (flipped / "verifier" / "reward.json").unlink()
    _rewrite(flipped / "result.json", verifier_result=None)
    _rewrite(flipped / "verifier" / "veriharm.json", task_exit_code=0, task_ran=True, harm_exit_code=1, harm_ran=False)
    run = run_import(release.pk, read_log("harbor", job))
    trial = run.trials.get(candidate__external_id=SECOND)
    assert (trial.status, trial.end, trial.r_task, trial.r_harm) == ("unresolved", "test_error", None, None)
    assert "V_harm did not run to a verdict (exit 1)" in trial.outcome_reason
    assert run.trials.get(candidate__external_id=FIRST).r_task == 1
