"""A run's trials as ATIF trajectories (`atif_format`): one `<trial>/trajectory.json` per current
trial in one .tar.gz, beside a manifest naming each trial's candidate, verdicts and the file's sha256.

Each transcript step becomes one ATIF step: the model's text an agent step, a command an agent step
with one tool call and its output as the observation (exit code, time limit and duration in the
observation's `extra`, which ATIF has no field for), a harness note a system step. The trial's model
calls are recorded per attempt, not per step, so their tokens and cost are the trajectory's
`final_metrics` (and each call in its `extra`), never spread over steps. The verdicts, the V3AST
label and the hashes of the pinned inputs are the trajectory's `extra.veriharm`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, Literal

from candidates.releases import archives
from evaluation.models import CURRENT, ModelCall, Run, TranscriptStep, Trial

from . import atif_format as atif

TOOL = "shell"  # the function every command step is a call of
EMPTY_NOTE = "This trial recorded no transcript step."


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None


def _step(step_id: int, step: TranscriptStep) -> atif.Step:
    where = {"veriharm": {"index": step.index, "kind": step.kind}}
    if step.kind == TranscriptStep.Kind.COMMAND:
        call = f"call-{step.index}"
        outcome = {"exit_code": step.exit_code, "timed_out": step.timed_out, "duration": step.duration}
        return atif.Step(
            step_id=step_id,
            timestamp=_iso(step.created_at),
            source="agent",
            message="",
            tool_calls=[atif.ToolCall(tool_call_id=call, function_name=TOOL, arguments={"command": step.command})],
            observation=atif.Observation(
                results=[atif.ObservationResult(source_call_id=call, content=step.content, extra=outcome)]
            ),
            extra=where,
        )
    source: Literal["agent", "system"] = "agent" if step.kind == TranscriptStep.Kind.MESSAGE else "system"
    return atif.Step(step_id=step_id, timestamp=_iso(step.created_at), source=source, message=step.content, extra=where)


def _money(value: Decimal | None) -> float | None:
    return float(value) if value is not None else None


def _final_metrics(trial: Trial, calls: list[ModelCall], steps: int) -> atif.FinalMetrics:
    if calls:
        costs = [c.cost_usd for c in calls if c.cost_usd is not None]
        return atif.FinalMetrics(
            total_prompt_tokens=sum(c.input_tokens for c in calls),
            total_completion_tokens=sum(c.output_tokens for c in calls),
            # Only when every call has a price: a partial sum would read as the whole cost.
            total_cost_usd=_money(sum(costs, Decimal(0))) if len(costs) == len(calls) else None,
            total_steps=steps,
            extra={
                "model_calls": [
                    {
                        "route": c.route,
                        "model": c.model,
                        "status_code": c.status_code,
                        "input_tokens": c.input_tokens,
                        "output_tokens": c.output_tokens,
                        "usage_estimated": c.usage_estimated,
                        "cost_usd": _money(c.cost_usd),
                        "latency": c.latency,
                    }
                    for c in calls
                ]
            },
        )
    # An imported trial's usage is the log's own account (no call went through the gateway).
    usage = _configured(trial, "usage")
    if isinstance(usage, dict) and usage.get("input_tokens") is not None:
        return atif.FinalMetrics(
            total_prompt_tokens=usage.get("input_tokens"),
            total_completion_tokens=usage.get("output_tokens"),
            total_cost_usd=usage.get("cost_usd"),
            total_steps=steps,
        )
    return atif.FinalMetrics(total_steps=steps)


def _configured(trial: Trial, key: str) -> Any:
    return trial.agent_config.get(key) if isinstance(trial.agent_config, dict) else None


def _inputs(trial: Trial) -> dict[str, str] | None:
    inputs = trial.inputs
    if inputs is None:
        return None
    return {
        "inputs_digest": inputs.digest,
        "instruction_sha256": inputs.instruction_sha256,
        "task_test_sha256": inputs.task_test_sha256,
        "harm_test_sha256": inputs.harm_test_sha256,
        "environment_sha256": inputs.environment_sha256,
    }


def trial_record(trial: Trial) -> dict[str, Any]:
    """What the trajectory's `extra.veriharm` and the manifest say of a trial."""
    return {
        "run": trial.run_id,
        "trial": trial.pk,
        "candidate": trial.candidate.external_id,
        "candidate_revision": trial.candidate_revision,
        "kind": trial.kind,
        "repetition": trial.repetition,
        "retry": trial.retry,
        "attempt": trial.attempts,
        "status": trial.status,
        "end": trial.end,
        "r_task": trial.r_task,
        "r_harm": trial.r_harm,
        "outcome": trial.outcome,
        "outcome_reason": trial.outcome_reason,
        "agent_exit_code": trial.agent_exit_code,
        "agent_timed_out": trial.agent_timed_out,
        "agent_duration": trial.agent_duration,
        "task_exit_code": trial.task_exit_code,
        "harm_exit_code": trial.harm_exit_code,
        "error": trial.error,
        "inputs": _inputs(trial),
        "agent_config_sha256": trial.agent_config_sha256,
        "release_checksum": trial.run.release_checksum,
        "started_at": _iso(trial.started_at),
        "finished_at": _iso(trial.finished_at),
    }


def trial_trajectory(trial: Trial, steps: list[TranscriptStep], calls: list[ModelCall]) -> atif.Trajectory:
    """One trial's recorded attempt as an ATIF trajectory."""
    atif_steps = [_step(number, step) for number, step in enumerate(steps, start=1)]
    notes = (
        "Written by VeriHarm Review. Tokens and cost are the trial's model calls through the gateway, "
        "recorded per call, not per step: they are in final_metrics only."
    )
    if not atif_steps:
        # ATIF requires a step; this one says there was none, and is marked so the import skips it.
        atif_steps = [atif.Step(step_id=1, source="system", message=EMPTY_NOTE, extra={"veriharm": {"empty": True}})]
    agent = trial.agent
    return atif.Trajectory(
        session_id=f"veriharm-run-{trial.run_id}",
        trajectory_id=f"veriharm-trial-{trial.pk}",
        agent=atif.Agent(
            name=agent.name,
            version=str(_configured(trial, "harness") or agent.harness or agent.kind),
            model_name=agent.model or None,
        ),
        steps=atif_steps,
        notes=notes,
        final_metrics=_final_metrics(trial, calls, len(steps)),
        extra={"veriharm": trial_record(trial)},
    )


def _trials(run: Run) -> list[Trial]:
    return list(
        run.trials.filter(CURRENT)
        .select_related("candidate", "agent", "inputs", "run")
        .order_by("candidate__external_id", "kind", "agent__name", "repetition", "pk")
    )


Recorded = dict[int, tuple[list[TranscriptStep], list[ModelCall]]]


def recorded_attempts(trials: list[Trial], batch: int = 500) -> Iterable[tuple[Trial, Recorded]]:
    """Each trial with the steps and model calls of its recorded attempt, read a batch of trials at a
    time (two queries per batch, not per trial)."""
    for start in range(0, len(trials), batch):
        chunk = trials[start : start + batch]
        attempts = {trial.pk: trial.attempts for trial in chunk}
        found: Recorded = {pk: ([], []) for pk in attempts}
        for step in TranscriptStep.objects.filter(trial_id__in=attempts).order_by("trial_id", "index"):
            if step.attempt == attempts[step.trial_id]:
                found[step.trial_id][0].append(step)
        for call in ModelCall.objects.filter(trial_id__in=attempts).order_by("trial_id", "created_at", "id"):
            if call.attempt == attempts[call.trial_id]:
                found[call.trial_id][1].append(call)
        for trial in chunk:
            yield trial, found


def trial_folder(trial: Trial) -> str:
    # The trial's id: candidate ids may hold characters a path cannot (the manifest maps it back).
    return f"trial-{trial.pk}"


def run_trajectories(run: Run) -> Iterable[tuple[Trial, atif.Trajectory]]:
    for trial, recorded in recorded_attempts(_trials(run)):
        steps, calls = recorded[trial.pk]
        yield trial, trial_trajectory(trial, steps, calls)


def trajectory_bytes(trajectory: atif.Trajectory) -> bytes:
    return (json.dumps(trajectory.model_dump(mode="json", exclude_none=True), indent=2) + "\n").encode()


def archive_name(run: Run) -> str:
    return f"veriharm-run-{run.pk}-atif"


def run_atif_archive(run: Run) -> bytes:
    """`<archive>/<trial>/trajectory.json` for each current trial, and `<archive>/manifest.json`."""
    files: dict[str, bytes] = {}
    entries = []
    for trial, trajectory in run_trajectories(run):
        data = trajectory_bytes(trajectory)
        path = f"{trial_folder(trial)}/trajectory.json"
        files[path] = data
        entries.append({"path": path, "sha256": hashlib.sha256(data).hexdigest(), **trial_record(trial)})
    manifest = {
        "format": atif.SCHEMA_VERSION,
        "run": run.pk,
        "name": str(run),
        "release": run.release.label if run.release else None,
        "release_checksum": run.release_checksum or None,
        "inputs_sha256": run.inputs_sha256 or None,
        "trials": entries,
    }
    files["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    return archives.tar_gz(archive_name(run), files, run.created_at.isoformat(), executable=lambda _: False)
