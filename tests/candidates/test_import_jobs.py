"""Imports run as background jobs: stored upload, a real worker, the same all-or-nothing result
with line-numbered errors, applied at most once, recovered when its worker or message is lost."""

from __future__ import annotations

import json
import stat
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.utils import timezone

from candidates import import_jobs
from candidates.import_jobs.selectors import import_job_state
from candidates.models import Candidate, ImportJob, ImportStatus
from tests.evaluation.conftest import wait_until
from tests.factories import CandidateLineFactory, jsonl


@pytest.fixture(autouse=True)
def import_dir(settings, tmp_path):
    settings.VERIHARM_IMPORT_DIR = tmp_path / "imports"
    return settings.VERIHARM_IMPORT_DIR


def upload(name: str, *lines) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, jsonl(*lines).encode())


def ended(job_id: int) -> ImportJob:
    wait_until(lambda: ImportJob.objects.get(pk=job_id).finished, 60, f"import job {job_id} to end")
    return ImportJob.objects.get(pk=job_id)


def test_the_api_answers_202_with_the_job_and_a_worker_imports_it(celery_worker_thread, curator_client):
    lines = [CandidateLineFactory(), CandidateLineFactory()]
    response = curator_client.post(
        "/api/candidates/import/", {"files": [upload("good.jsonl", *lines)]}, format="multipart"
    )
    assert response.status_code == 202
    data = response.json()
    assert data["status"] in ("queued", "running", "done") and data["total_lines"] == 2
    assert response["Location"] == data["status_url"] and data["status_url"].endswith(
        f"/api/candidates/import/jobs/{data['id']}/"
    )
    ended(data["id"])
    status = curator_client.get(data["status_url"]).json()
    assert status["status"] == "done" and status["percent"] == 100 and status["errors"] == []
    assert status["summary"]["created"] == 2 and status["summary"]["source_tasks_created"] >= 1
    assert Candidate.objects.count() == 2


def test_a_bad_line_refuses_the_whole_job_and_names_the_line(celery_worker_thread, curator_client):
    bad = dict(CandidateLineFactory(), perturbation="nope")
    response = curator_client.post(
        "/api/candidates/import/", {"files": [upload("bad.jsonl", CandidateLineFactory(), bad)]}, format="multipart"
    )
    assert response.status_code == 202
    job = ended(response.json()["id"])
    status = curator_client.get(response.json()["status_url"]).json()
    assert status["status"] == "refused" and status["summary"] is None
    assert [(e["file"], e["line"], e["field"]) for e in status["errors"]] == [("bad.jsonl", 2, "perturbation")]
    assert job.errors[0]["message"]
    assert Candidate.objects.count() == 0  # the good first line was not imported either


def test_the_upload_page_leads_to_the_job_page_with_every_error(celery_worker_thread, curator_client):
    bad = dict(CandidateLineFactory(), perturbation="nope")
    response = curator_client.post("/candidates/import/", {"files": [upload("bad.jsonl", bad)]})
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/candidates/import/jobs/{job.pk}/"
    ended(job.pk)
    page = curator_client.get(response["Location"]).content.decode()
    assert "Nothing was imported: 1 problem" in page
    assert "bad.jsonl</span>, line 1, field <code>perturbation</code>" in page
    assert Candidate.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_the_task_run_twice_imports_once(curator, import_dir):
    from veriharm_site.celery import app

    job = import_jobs.import_job_create(user=curator, uploads=[upload("a.jsonl", CandidateLineFactory())])
    app.control.purge()  # no worker here: the task body is called directly, twice
    assert import_jobs.import_job_execute(job.pk) == "done"
    first = ImportJob.objects.get(pk=job.pk)
    assert import_jobs.import_job_execute(job.pk) == "finished"
    again = ImportJob.objects.get(pk=job.pk)
    assert (again.summary, again.finished_at, again.attempts) == (first.summary, first.finished_at, 1)
    assert first.summary["created"] == 1 and Candidate.objects.count() == 1
    # The upload was kept only until the job ended.
    assert not (import_dir / job.token).exists()


@pytest.mark.django_db(transaction=True)
def test_uploaded_files_are_stored_under_a_random_folder_never_under_their_own_name(curator, import_dir):
    from veriharm_site.celery import app

    job = import_jobs.import_job_create(user=curator, uploads=[upload("../../etc/evil.jsonl", CandidateLineFactory())])
    app.control.purge()
    folder = import_dir / job.token
    assert [p.name for p in folder.iterdir()] == ["000.jsonl"] and len(job.token) == 32
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE((folder / "000.jsonl").stat().st_mode) == 0o600
    assert job.files == [
        {"name": "evil.jsonl", "stored": "000.jsonl", "size": (folder / "000.jsonl").stat().st_size, "lines": 1}
    ]
    assert not list(Path(import_dir).parent.glob("etc"))


@pytest.mark.django_db(transaction=True)
def test_progress_is_read_from_the_running_job(curator, import_dir):
    from veriharm_site.celery import app

    job = import_jobs.import_job_create(
        user=curator, uploads=[upload("a.jsonl", *[CandidateLineFactory() for _ in range(4)])]
    )
    app.control.purge()
    assert import_job_state(job).phase == "waiting" and import_job_state(job).percent == 0
    ImportJob.objects.filter(pk=job.pk).update(status=ImportStatus.RUNNING)
    (import_dir / job.token / "progress.json").write_text(json.dumps({"validated": 4, "imported": 2}))
    state = import_job_state(ImportJob.objects.get(pk=job.pk))
    assert (state.phase, state.validated, state.imported, state.percent) == ("importing", 4, 2, 75)


@pytest.mark.django_db(transaction=True)
def test_the_sweep_finds_jobs_nobody_runs_and_no_message_waits_for(curator, settings):
    settings.VERIHARM_RECOVERY_QUEUED_SECONDS = 60
    young = ImportJob.objects.create(token="a" * 32, created_by=curator, files=[])
    old = ImportJob.objects.create(
        token="b" * 32, created_by=curator, files=[], created_at=timezone.now() - timedelta(minutes=5)
    )
    dead = ImportJob.objects.create(
        token="c" * 32, created_by=curator, files=[], status=ImportStatus.RUNNING, started_at=timezone.now()
    )
    alive = ImportJob.objects.create(
        token="d" * 32, created_by=curator, files=[], status=ImportStatus.RUNNING, started_at=timezone.now()
    )
    # A worker importing `alive` holds its row lock for the whole import (another connection here).
    locked, release = threading.Event(), threading.Event()

    def importing() -> None:
        with transaction.atomic():
            ImportJob.objects.select_for_update().get(pk=alive.pk)
            locked.set()
            release.wait(30)
        connection.close()

    holder = threading.Thread(target=importing)
    holder.start()
    try:
        assert locked.wait(10)
        with transaction.atomic():
            assert import_jobs.jobs_needing_a_message(set()) == [old.pk, dead.pk]
            # Their messages still wait in the broker: nothing to do.
            assert import_jobs.jobs_needing_a_message({old.pk, dead.pk}) == []
    finally:
        release.set()
        holder.join()
    assert young.pk not in (old.pk, dead.pk)


@pytest.mark.django_db(transaction=True)
def test_a_job_whose_worker_died_is_imported_once_after_the_sweep(curator, settings):
    from celery.contrib.testing.worker import start_worker

    from veriharm_site.celery import app

    app.control.purge()
    job = import_jobs.import_job_create(user=curator, uploads=[upload("a.jsonl", CandidateLineFactory())])
    # Its worker was killed mid-import: the import's transaction rolled back, the row still says
    # running, and the message went with the worker.
    app.control.purge()
    ImportJob.objects.filter(pk=job.pk).update(status=ImportStatus.RUNNING, attempts=1, started_at=timezone.now())
    with start_worker(
        app, pool="solo", concurrency=1, perform_ping_check=False, loglevel="WARNING", shutdown_timeout=30
    ):
        assert import_jobs.import_jobs_republish() == [job.pk]
        done = ended(job.pk)
    assert done.status == ImportStatus.DONE and done.attempts == 2 and done.summary["created"] == 1
    assert Candidate.objects.count() == 1
    assert import_jobs.import_jobs_republish() == []


def test_annotators_cannot_see_or_start_import_jobs(curator, annotator_client):
    job = ImportJob.objects.create(token="e" * 32, created_by=curator, files=[])
    assert annotator_client.get(f"/api/candidates/import/jobs/{job.pk}/").status_code == 403
    assert annotator_client.get(f"/candidates/import/jobs/{job.pk}/").status_code == 403


def test_a_jobs_batch_is_what_its_files_held_and_the_ranking_opens_just_it(curator, curator_client):
    from veriharm_site.celery import app

    app.control.purge()  # no worker here: the task body is called directly
    first = import_jobs.import_job_create(
        user=curator, uploads=[upload("first.jsonl", CandidateLineFactory(id="first-a"), CandidateLineFactory())]
    )
    assert import_jobs.import_job_execute(first.pk) == "done"
    kept = CandidateLineFactory(id="both")
    second = import_jobs.import_job_create(
        user=curator, uploads=[upload("second.jsonl", kept, CandidateLineFactory(id="second-b"))]
    )
    assert import_jobs.import_job_execute(second.pk) == "done"
    again = import_jobs.import_job_create(user=curator, uploads=[upload("again.jsonl", kept)])
    assert import_jobs.import_job_execute(again.pk) == "done"
    # The counts are what the job keeps; the batch is each candidate's latest job.
    assert set(ImportJob.objects.get(pk=second.pk).summary) >= {"created", "unchanged", "replaced"}
    assert "candidate_pks" not in ImportJob.objects.get(pk=second.pk).summary

    def shown(job_id: int) -> list[str]:
        page = curator_client.get("/candidates/", {"import_job": job_id})
        assert page.status_code == 200
        api = curator_client.get("/api/candidates/", {"import_job": job_id}).json()
        ids = sorted(row["id"] for row in api["results"])
        assert all(f'href="/candidates/c/{ext}/"' in page.content.decode() for ext in ids)
        return ids

    assert shown(first.pk)[0] == "first-a" and len(shown(first.pk)) == 2
    assert shown(second.pk) == ["second-b"]
    assert shown(again.pk) == ["both"]  # unchanged, but this import's files held it
    page = curator_client.get(f"/candidates/import/jobs/{second.pk}/").content.decode()
    assert f'href="/candidates/?import_job={second.pk}"' in page and "Open the 2 candidates of this import" in page
    missing = curator_client.get("/candidates/", {"import_job": again.pk + 100})
    assert missing.status_code == 400 and f"no import has the id {again.pk + 100}" in missing.content.decode()
