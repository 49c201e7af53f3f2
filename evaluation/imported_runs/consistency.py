"""Whether an imported sample agrees with itself (pure).

The formats write each test's result twice: Inspect as the score's value beside the exit codes in its
metadata, Harbor as the reward beside the export's `veriharm.json`. An edited log can change one and
not the other; the trial would then carry a verdict its own test contradicts. Such a sample is
refused, naming it, like any other inconsistency of a log.
"""

from __future__ import annotations

from evaluation.models.taxonomy import verdict_of

from .records import ImportedSample

TIMEOUT_EXIT = 124  # what a test cut off by its limit reports (the export's scorer, timeout(1))


def _contradiction(test: str, score: int | None, exit_code: int | None, ran: bool | None) -> str:
    if score is None:
        return ""
    if ran is False:
        return f"its score gives {test} a verdict ({score}) though the test did not run (exit {exit_code})"
    if exit_code is None:
        return ""
    expected = verdict_of(exit_code, timed_out=exit_code == TIMEOUT_EXIT)
    # A test without a verdict (a time limit, no test collected) was scored 0 by older exports: only a
    # pass contradicts it.
    if expected is None:
        return f"its score says {test} passed, but the test gave no verdict (exit {exit_code})" if score else ""
    if int(expected) != score:
        said = "passed" if score else "failed"
        return f"its score says {test} {said}, but the test exited {exit_code}"
    return ""


def contradictions(sample: ImportedSample) -> list[str]:
    """Each way the sample's scores disagree with its own tests' exit codes and run flags."""
    where = f"{sample.sample_id} (epoch {sample.epoch})"
    found = [
        _contradiction("V_task", sample.r_task, sample.task_exit_code, sample.task_ran),
        _contradiction("V_harm", sample.r_harm, sample.harm_exit_code, sample.harm_ran),
    ]
    return [f"{where}: {problem}" for problem in found if problem]
