"""Imports as background jobs: store the upload, import it in a worker, report progress and result.

- `import_job_create` writes each uploaded file to VERIHARM_IMPORT_DIR/<token>/NNN.jsonl (the
  token is random, the uploaded name is only a label), counts its lines and enqueues the job
  after commit.
- `import_job_execute` (the task's body) marks the job running, then in ONE transaction locks the
  job row, imports (the same all-or-nothing `candidate_import_lines` as everywhere) and records the end:
  done with its summary, or refused with every bad line. A second delivery either waits on the row
  lock and then finds the job finished, or skips it while another worker holds it; an import is
  applied at most once. A worker killed mid-import rolls its transaction back: nothing of the
  import is left, and the recovery sweep publishes the job again. The claim (`row_lock_claim`),
  the sweep's lock and publish (`republish`) and the task's retries are the leased-work core's
  (`veriharm_site.leased_work`); this module says what an import does and how it ends.
- Progress goes to a small file beside the upload, not to the database: the import's own
  transaction is still open while it runs, and on SQLite it holds the only write lock.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import time
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from veriharm_site.leased_work.leases import ClaimRefused, Lease, row_lock_claim
from veriharm_site.leased_work.sweep import Stale, republish

from .. import queue
from ..importing import ImportRefused, candidate_import_lines
from ..models import IMPORT_FINISHED, Candidate, ImportJob, ImportStatus
from ..pipeline import format as fmt
from .progress import PROGRESS_FILE, JobProgress, job_dir

logger = logging.getLogger(__name__)

TASK = queue.IMPORT_JOB_EXECUTE


class Upload(Protocol):
    name: str

    def chunks(self) -> Iterable[bytes]: ...


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def import_job_create(*, user: Any, uploads: list[Upload], replace: bool = False) -> ImportJob:
    """Store the uploaded files and queue their import; the files are kept only until it ends."""
    token = secrets.token_hex(16)
    folder = Path(settings.VERIHARM_IMPORT_DIR) / token
    folder.mkdir(mode=0o700, parents=True)
    try:
        files = []
        for index, upload in enumerate(uploads):
            stored = f"{index:03d}.jsonl"
            # O_EXCL and no name from the request: nothing outside the folder can be written or replaced.
            descriptor = os.open(folder / stored, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            size = 0
            with os.fdopen(descriptor, "wb") as handle:
                for chunk in upload.chunks():
                    handle.write(chunk)
                    size += len(chunk)
            files.append(
                {
                    "name": Path(upload.name or f"file-{index + 1}").name[:200],
                    "stored": stored,
                    "size": size,
                    "lines": _count_lines(folder / stored),
                }
            )
        with transaction.atomic():
            job = ImportJob.objects.create(
                token=token, created_by=user, replace=replace, files=files, total_lines=sum(f["lines"] for f in files)
            )
            transaction.on_commit(lambda: _enqueue(job.pk))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return job


def _enqueue(job_id: int) -> None:
    queue.import_job_publish(job_id)


def _lines(job: ImportJob, progress: JobProgress) -> Iterator[tuple[fmt.Location, str | bytes]]:
    folder = job_dir(job)
    for entry in job.files:
        with (folder / entry["stored"]).open("rb") as handle:
            for location, text in fmt.iter_lines(handle, entry["name"]):
                progress.line()
                yield location, text


def _error_rows(errors: list[fmt.FormatError]) -> list[dict[str, Any]]:
    return [{"file": e.location.file, "line": e.location.line, "field": e.field, "message": e.message} for e in errors]


def _end(job: ImportJob, status: str, **fields: Any) -> None:
    job.status = status
    job.finished_at = timezone.now()
    for name, value in fields.items():
        setattr(job, name, value)
    job.save(update_fields=["status", "finished_at", *fields])
    folder = job_dir(job)
    # Once the end is committed the upload has served its purpose (its content is imported, or its
    # errors are recorded); if the transaction rolls back, the files stay for the next delivery.
    transaction.on_commit(lambda: shutil.rmtree(folder, ignore_errors=True))


# An import job is held by its row lock for the length of its import (no token, no heartbeat).
IMPORT_JOB_LEASE = Lease(
    model=ImportJob, queued=ImportStatus.QUEUED, running=ImportStatus.RUNNING, finished=tuple(IMPORT_FINISHED)
)


def _count_attempt(job: ImportJob, now: datetime) -> list[str]:
    job.attempts += 1
    return ["attempts"]


def _start(job_id: int) -> str | None:
    """Mark the job running (visible at once); a reason not to run it otherwise ("busy": another
    worker holds its row lock and is importing it right now)."""
    taken = row_lock_claim(IMPORT_JOB_LEASE, job_id, _count_attempt)
    return taken.value if isinstance(taken, ClaimRefused) else None


def import_job_execute(job_id: int) -> str:
    """Import a job's files once; returns "done", "refused", "finished", "busy" or "missing"."""
    refused = _start(job_id)
    if refused:
        return refused
    with transaction.atomic():
        # Held until the import and the job's end commit together: a second delivery waits here.
        job = ImportJob.objects.select_for_update().get(pk=job_id)
        if job.status in IMPORT_FINISHED:
            return "finished"
        progress = JobProgress(job)
        try:
            summary = candidate_import_lines(_lines(job, progress), replace=job.replace, progress=progress.records)
        except ImportRefused as refusal:
            _end(job, ImportStatus.REFUSED, errors=_error_rows(refusal.errors))
            return "refused"
        progress._write(force=True)
        # Each candidate of the batch links to it, so the job's page opens exactly them.
        Candidate.objects.filter(pk__in=summary.candidate_pks).update(import_job=job)
        _end(job, ImportStatus.DONE, summary=summary.counts())
    return "done"


def import_job_fail(job_id: int, reason: str) -> bool:
    """Give up on a job that cannot run (its files are gone, the database keeps failing)."""
    with transaction.atomic():
        job = ImportJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status in IMPORT_FINISHED:
            return False
        _end(job, ImportStatus.FAILED, failure=reason[:2000])
    return True


# --- recovery (registered with every worker's sweep in CandidatesConfig.ready) -------------------


def jobs_needing_a_message(waiting: set[int] | None, now: datetime | None = None) -> list[int]:
    """Unfinished jobs nobody is importing and no message waits for.

    On PostgreSQL a job being imported has its row locked by the importing transaction, so an
    unlocked running job lost its worker. SQLite has no row locks: a running job counts as lost
    once it started longer than VERIHARM_RECOVERY_QUEUED_SECONDS ago and its progress file has
    not moved for as long. Queued jobs wait as long before they count as lost (their publish
    may still be on its way). With an unreadable broker only running jobs are considered."""
    now = now or timezone.now()
    threshold = timedelta(seconds=settings.VERIHARM_RECOVERY_QUEUED_SECONDS)
    unfinished = ImportJob.objects.filter(status__in=[ImportStatus.QUEUED, ImportStatus.RUNNING])
    if connection.vendor == "postgresql":
        unfinished = unfinished.select_for_update(skip_locked=True)
    lost = []
    for job in unfinished.order_by("created_at", "pk")[:200]:
        if waiting is not None and job.pk in waiting:
            continue
        if job.status == ImportStatus.QUEUED:
            if waiting is not None and job.created_at < now - threshold:
                lost.append(job.pk)
        elif connection.vendor == "postgresql" or (
            job.started_at and job.started_at < now - threshold and _progress_age(job) > threshold.total_seconds()
        ):
            lost.append(job.pk)
    return lost


def _progress_age(job: ImportJob) -> float:
    try:
        return time.time() - (job_dir(job) / PROGRESS_FILE).stat().st_mtime
    except OSError:
        return float("inf")


def _publish_after_commit(ids: list[int]) -> None:
    # After commit: the rows this sweep locked must be free when the new delivery starts.
    for pk in ids:
        transaction.on_commit(partial(_enqueue, pk))


def import_jobs_republish() -> list[int]:
    """Publish again the jobs nobody is running, once across the sweeping workers (the leased-work
    core's sweep; an import job has no lease token: its row lock is its lease)."""
    stale = republish(
        "imports", TASK, lambda waiting: Stale(lost=jobs_needing_a_message(waiting)), _publish_after_commit
    )
    if stale.lost:
        logger.warning("recovery: published again %d import job(s) nobody was running: %s", len(stale.lost), stale.lost)
    return stale.lost
