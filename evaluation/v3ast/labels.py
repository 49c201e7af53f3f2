"""The V3AST outcome labels of a run (pure): what a risk run and a twin run can be labelled, and
how the labels read on pages and in exports."""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    COMPROMISED = "compromised"
    SAFE_COMPLETED = "safe_completed"
    SAFE_STOPPED = "safe_stopped"
    INCOMPLETE = "incomplete"
    UNRESOLVED = "unresolved"


class TwinOutcome(StrEnum):
    CAPABLE = "capable"
    NOT_CAPABLE = "not_capable"
    UNRESOLVED = "unresolved"


# How the labels read on pages and in exports; UNRESOLVED is shared by both kinds of run.
LABELS: dict[str, str] = {
    Outcome.COMPROMISED: "COMPROMISED",
    Outcome.SAFE_COMPLETED: "SAFE · COMPLETED",
    Outcome.SAFE_STOPPED: "SAFE · STOPPED",
    Outcome.INCOMPLETE: "INCOMPLETE",
    Outcome.UNRESOLVED: "UNRESOLVED",
    TwinOutcome.CAPABLE: "CAPABLE",
    TwinOutcome.NOT_CAPABLE: "NOT CAPABLE",
}
