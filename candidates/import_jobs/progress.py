"""An import job's progress and its folder: the job writes how far it got (validated lines, imported
records) into a small file beside its uploads, and its page reads it (`import_jobs.selectors.import_job_state`)
without importing the job's machinery."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from django.conf import settings

from ..models import ImportJob

logger = logging.getLogger(__name__)

PROGRESS_FILE = "progress.json"
# Progress is written at most this often (seconds): enough for a bar, cheap for a large file.
PROGRESS_EVERY = 0.25


def job_dir(job: ImportJob) -> Path:
    return Path(settings.VERIHARM_IMPORT_DIR) / job.token


class JobProgress:
    """Counts validated lines and imported records into the job's progress file."""

    def __init__(self, job: ImportJob) -> None:
        self.path = job_dir(job) / PROGRESS_FILE
        self.validated = 0
        self.imported = 0
        self._written = 0.0

    def line(self) -> None:
        self.validated += 1
        self._write()

    def records(self, count: int) -> None:
        self.imported += count
        self._write()

    def _write(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._written < PROGRESS_EVERY:
            return
        self._written = now
        temporary = self.path.with_suffix(".tmp")
        try:
            temporary.write_text(json.dumps({"validated": self.validated, "imported": self.imported}))
            temporary.replace(self.path)  # readers see the old file or the new one, never half of one
        except OSError:
            logger.warning("could not write the progress of %s", self.path, exc_info=True)


def progress_read(job: ImportJob) -> dict[str, int]:
    """What a running job has got through: validated lines and imported records."""
    try:
        data = json.loads((job_dir(job) / PROGRESS_FILE).read_text())
        return {"validated": int(data.get("validated", 0)), "imported": int(data.get("imported", 0))}
    except (OSError, ValueError, AttributeError):
        return {"validated": 0, "imported": 0}
