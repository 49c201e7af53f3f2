"""Reads of an import job: where it is (waiting, validating, importing, done, refused, failed) and
how far, from its row and the progress file its worker writes."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import ImportJob, ImportStatus
from .progress import progress_read


@dataclass(frozen=True)
class ImportJobState:
    """What the job page and the API show of an import job while it runs and once it ended."""

    job: ImportJob
    phase: str  # "waiting", "validating", "importing", or the job's end
    validated: int
    imported: int
    percent: int

    @property
    def errors(self) -> list[dict]:
        return self.job.errors


def import_job_state(job: ImportJob) -> ImportJobState:
    """Progress of a job: its lines validated, then its records imported (about one per line)."""
    if job.status == ImportStatus.QUEUED:
        return ImportJobState(job, "waiting", 0, 0, 0)
    if job.finished:
        validated = job.total_lines if job.status != ImportStatus.FAILED else 0
        imported = job.total_lines if job.status == ImportStatus.DONE else 0
        return ImportJobState(job, job.status, validated, imported, 100)
    seen = progress_read(job)
    total = max(job.total_lines, 1) * 2
    # Never 100 before the end is recorded: the last step (commit) still has to happen.
    percent = min(99, (100 * (min(seen["validated"], job.total_lines) + seen["imported"])) // total)
    phase = "importing" if seen["validated"] >= job.total_lines and job.total_lines else "validating"
    return ImportJobState(job, phase, seen["validated"], seen["imported"], percent)
