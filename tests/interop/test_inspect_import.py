"""An Inspect eval log of an exported release brought back as a run: one trial per sample and
epoch with the verdicts Inspect's scorer gave, the release's hashes, the log's identity; a log of
another release, of edited items or of unknown samples is refused whole."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.scorer import Score

from candidates.curation.revisions import candidate_revise
from candidates.models import Candidate
from candidates.releases.services import release_create, release_freeze
from evaluation.imported_runs.readers import read_log
from evaluation.imported_runs.records import LogRefused
from evaluation.imported_runs.services import run_import
from evaluation.models import Backend, Run, TranscriptStep, Trial, TrialKind
from evaluation.results.selectors import harm_test_verdicts
from evaluation.runs.selection import release_candidates
from evaluation.trials import pinning
from tests.hostile.seed import table_counts
from tests.interop.support import FIRST, SECOND, freeze_examples, reference_log

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(examples_imported, curator):
    return freeze_examples(curator)


@pytest.fixture(scope="session")
def logs_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("inspect-logs")


def verdicts(run: Run) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    return {
        (t.candidate.external_id, t.repetition): (t.r_task, t.r_harm) for t in run.trials.select_related("candidate")
    }


def test_a_log_of_the_safe_and_harmful_references_imports_with_the_same_verdicts(release, curator, logs_dir):
    safe_log = reference_log(release, "safe", logs_dir, epochs=2)
    run = run_import(release.pk, read_log("inspect", safe_log), user=curator)
    assert verdicts(run) == {(FIRST, 1): (1, 0), (FIRST, 2): (1, 0), (SECOND, 1): (1, 0), (SECOND, 2): (1, 0)}
    assert run.backend == Backend.EXTERNAL and run.imported and run.repetitions == 2 and run.test_timeout == 600
    assert run.release == release and run.release_checksum == release.checksum
    assert run.source["file_sha256"] == hashlib.sha256(safe_log.read_bytes()).hexdigest()
    assert run.source["task"] == "veriharm-bench-1.0" and run.source["task_version"] == "1.0"
    assert run.source["solver"].endswith("safe") and run.source["harness"] == "inspect"
    # The trials pinned exactly what a launch of the release would pin.
    expected = {p.external_id: pinning.parts_for(p, TrialKind.RISK).digest for p in release_candidates(release)}
    assert {
        t.candidate.external_id: t.inputs.digest for t in run.trials.select_related("candidate", "inputs")
    } == expected
    assert {t.outcome for t in run.trials.all()} == {"safe_completed"}
    assert TranscriptStep.objects.filter(trial__run=run, content__contains="safe reference").exists()

    harmful = run_import(release.pk, read_log("inspect", reference_log(release, "harmful", logs_dir)))
    assert verdicts(harmful) == {(FIRST, 1): (1, 1), (SECOND, 1): (1, 1)}
    assert {t.outcome for t in harmful.trials.all()} == {"compromised"}


def test_the_command_imports_a_log(release, curator, logs_dir):
    log = reference_log(release, "harmful", logs_dir)
    call_command("import_run_log", "veriharm-bench", "1.0", str(log), "--user", curator.username)
    run = Run.objects.get()
    assert run.created_by == curator and verdicts(run) == {(FIRST, 1): (1, 1), (SECOND, 1): (1, 1)}


def test_a_log_of_another_release_changes_no_row(release, curator, logs_dir):
    log = reference_log(release, "safe", logs_dir, epochs=2)
    candidate = Candidate.objects.get(external_id=SECOND)
    candidate_revise(
        candidate_id=candidate.pk,
        user=curator,
        instruction=candidate.instruction,
        harm_test=candidate.harm_test + "\n# stricter\n",
        reason="clearer",
        base_revision=candidate.revision,
    )
    later = release_freeze(release_create(user=curator, name="veriharm-bench", version="1.1").pk, user=curator)
    before = table_counts()
    with pytest.raises(LogRefused) as refused:
        run_import(later.pk, read_log("inspect", log))
    assert "checksum" in str(refused.value) and "veriharm-bench 1.1" in str(refused.value)
    with pytest.raises(CommandError, match="nothing imported"):
        call_command("import_run_log", "veriharm-bench", "1.1", str(log))
    assert table_counts() == before and not Run.objects.exists() and not Trial.objects.exists()


def _tampered(log_path: Path, into: Path, change) -> Path:
    log = read_eval_log(str(log_path))
    assert log.samples is not None
    change(log.samples)
    target = into / "tampered.json"
    write_eval_log(log, str(target), format="json")
    return target


def test_a_log_of_edited_items_or_unknown_samples_is_refused_naming_them(release, logs_dir, tmp_path):
    log = reference_log(release, "safe", logs_dir, epochs=2)

    def edit(samples):
        samples[0].metadata["harm_test_sha256"] = "0" * 64

    def unknown(samples):
        samples[-1].id = "bb-000000/nobody/nothing"

    before = table_counts()
    with pytest.raises(LogRefused, match="harm_test_sha256 differ"):
        run_import(release.pk, read_log("inspect", _tampered(log, tmp_path, edit)))
    with pytest.raises(LogRefused, match="bb-000000/nobody/nothing"):
        run_import(release.pk, read_log("inspect", _tampered(log, tmp_path, unknown)))
    with pytest.raises(LogRefused, match="not a readable Inspect eval log"):
        (tmp_path / "broken.eval").write_bytes(b"not a zip")
        read_log("inspect", tmp_path / "broken.eval")
    assert table_counts() == before


def test_the_page_and_the_api_import_a_log_and_the_run_pages_say_it_is_imported(
    release, logs_dir, admin_client_, curator
):
    log = reference_log(release, "harmful", logs_dir)
    with log.open("rb") as handle:
        answer = admin_client_.post(
            reverse("evaluation:run-import"), {"release": release.pk, "harness": "inspect", "log": handle}
        )
    assert answer.status_code == 302
    run = Run.objects.get()
    assert answer["Location"] == reverse("evaluation:run", args=[run.pk])
    for page in ("evaluation:run", "evaluation:run-metrics", "evaluation:v3ast-matrix"):
        html = admin_client_.get(reverse(page, args=[run.pk])).content.decode()
        assert 'data-testid="imported-run"' in html and log.name in html, page
    trial = run.trials.first()
    assert (
        'data-testid="imported-run"' in admin_client_.get(reverse("evaluation:trial", args=[trial.pk])).content.decode()
    )
    listing = admin_client_.get(reverse("evaluation:runs")).content.decode()
    assert "imported (inspect)" in listing
    # Its trials ran elsewhere: nothing offers to run them again, and the API refuses it.
    assert 'data-testid="rerun"' not in admin_client_.get(reverse("evaluation:run", args=[run.pk])).content.decode()
    before = table_counts()
    rerun = admin_client_.post(reverse("api-evaluation-run-rerun", args=[run.pk]), {}, format="json")
    assert rerun.status_code == 400 and "backend" in str(rerun.json())
    retry = admin_client_.post(
        reverse("api-evaluation-run-retry", args=[run.pk]), {"ends": ["test_error"]}, format="json"
    )
    assert retry.status_code == 409 and "another harness" in str(retry.json())
    assert table_counts() == before
    # The harm tests' verdicts beside the human ones include the imported trials.
    verdicts_shown = harm_test_verdicts([trial.candidate_id])[trial.candidate_id]
    assert any(
        r.agent.startswith("inspect: mockllm/model") and (r.r_task, r.r_harm) == (1, 1) for r in verdicts_shown.results
    )

    with log.open("rb") as handle:
        api = admin_client_.post(
            reverse("api-evaluation-run-import"), {"release": release.pk, "harness": "inspect", "log": handle}
        )
    assert api.status_code == 201 and api.json()["source"]["file_sha256"] == run.source["file_sha256"]


def test_the_page_and_the_api_refuse_a_log_of_another_release_naming_it(release, logs_dir, admin_client_, curator):
    log = reference_log(release, "harmful", logs_dir)
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
    with log.open("rb") as handle:
        page = admin_client_.post(
            reverse("evaluation:run-import"), {"release": later.pk, "harness": "inspect", "log": handle}
        )
    assert page.status_code == 400 and "not veriharm-bench 1.1" in page.content.decode()
    with log.open("rb") as handle:
        api = admin_client_.post(
            reverse("api-evaluation-run-import"), {"release": later.pk, "harness": "inspect", "log": handle}
        )
    assert api.status_code == 400 and "not veriharm-bench 1.1" in str(api.json())
    not_a_log = admin_client_.post(
        reverse("api-evaluation-run-import"),
        {"release": release.pk, "harness": "inspect", "log": SimpleUploadedFile("notes.txt", b"hello")},
    )
    assert not_a_log.status_code == 400 and ".eval or .json" in str(not_a_log.json())
    assert table_counts() == before


def test_a_score_its_own_test_contradicts_is_refused_and_an_unscored_sample_is_no_verdict(release, logs_dir, tmp_path):
    log = reference_log(release, "safe", logs_dir)

    def flip(samples):
        # The trap of a hand edit: the harm score set to 1 while the harm test's exit code stays 1.
        samples[0].scores["veriharm_scorer"].value["harm"] = 1

    before = table_counts()
    with pytest.raises(LogRefused, match=r"\(epoch 1\): its score says V_harm passed, but the test exited 1"):
        run_import(release.pk, read_log("inspect", _tampered(log, tmp_path, flip)))
    assert table_counts() == before

    def not_run(samples):
        # What the export's scorer writes when a test did not run: the sample kept, unscored.
        metadata = {**samples[0].scores["veriharm_scorer"].metadata, "task_exit_code": 5, "task_ran": False}
        samples[0].scores["veriharm_scorer"] = Score.unscored(reason="scoring_failed", metadata=metadata)

    run = run_import(release.pk, read_log("inspect", _tampered(log, tmp_path, not_run)))
    first, second = sorted(run.trials.select_related("candidate"), key=lambda t: t.candidate.external_id != FIRST)
    assert (first.status, first.end, first.r_task, first.r_harm) == ("unresolved", "test_error", None, None)
    assert first.outcome_reason == "V_task did not run to a verdict (exit 5)"
    assert (second.status, second.r_task, second.r_harm) == ("done", 1, 0)
