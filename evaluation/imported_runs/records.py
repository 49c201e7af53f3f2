"""What an imported log holds, read out of its harness's own format (pure: no database)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from veriharm_site.refusals import Refused

# The hashes an export puts in each item's metadata, which a trial of the same item pins.
ITEM_HASHES = (
    "line_sha256",
    "instruction_sha256",
    "task_test_sha256",
    "harm_test_sha256",
    "environment_sha256",
    "inputs_digest",
)
OUTPUT_LIMIT = 20_000  # characters of a test's output or a step kept, as the in-app trials keep


class LogRefused(Refused):
    """A log that cannot be imported, with every reason found."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("log", "; ".join(messages))
        self.messages = messages

    def error_pairs(self) -> list[tuple[str, str]]:
        return [("log", message) for message in self.messages]


@dataclass(frozen=True)
class ImportedStep:
    kind: str  # a TranscriptStep.Kind value
    content: str = ""
    command: str = ""
    # A command's, where the log records them (VeriHarm's own ATIF export does).
    exit_code: int | None = None
    timed_out: bool = False
    duration: float | None = None


@dataclass(frozen=True)
class ImportedSample:
    """One sample and epoch (Inspect) or one trial (Harbor) of the log."""

    sample_id: str
    epoch: int
    metadata: dict[str, Any]
    r_task: int | None
    r_harm: int | None
    task_exit_code: int | None = None
    harm_exit_code: int | None = None
    # False: the test did not run to a verdict (the export's verifier says so); None: not recorded.
    task_ran: bool | None = None
    harm_ran: bool | None = None
    task_output: str = ""
    harm_output: str = ""
    error: str = ""
    steps: list[ImportedStep] = field(default_factory=list)
    last_message: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    duration: float | None = None


@dataclass(frozen=True)
class ImportedLog:
    harness: str  # "inspect" | "harbor"
    file_name: str
    file_sha256: str
    task: str
    task_version: str
    release_checksum: str
    model: str
    solver: str
    harness_version: str
    samples: list[ImportedSample]
    ids: dict[str, str] = field(default_factory=dict)  # the log's own ids (eval, run, job)
    sandbox: str = ""

    def source(self) -> dict[str, Any]:
        """What the run records of where it came from (`Run.source`)."""
        return {
            "harness": self.harness,
            "harness_version": self.harness_version,
            "file_name": self.file_name,
            "file_sha256": self.file_sha256,
            "task": self.task,
            "task_version": self.task_version,
            "release_checksum": self.release_checksum,
            "model": self.model,
            "solver": self.solver,
            "sandbox": self.sandbox,
            "samples": len(self.samples),
            **self.ids,
        }


def clip(text: str) -> str:
    return text if len(text) <= OUTPUT_LIMIT else text[-OUTPUT_LIMIT:]
