"""A run as an Inspect AI eval log (`.eval`: a zip of JSON, as Inspect 0.3 writes it), so Inspect's
viewer and the tools that read its logs open this application's runs. Written by our own code
through the typed models of `inspect_log_format`; inspect-ai is needed only to read it.

One sample per current risk trial (its candidate's id, its repetition as the epoch): the
instruction as the user's message, the model's text as assistant messages, each command as an
assistant tool call of `bash` and its output as the tool's message (its exit code, time limit and
duration in that message's metadata), the verdicts as the `veriharm_scorer` score the release's
Inspect export writes, so the log imports back as a run. What Inspect's messages and events have no
counterpart for is not invented: the harness's own notes are in the sample's metadata with their
place in the transcript, and the header's metadata lists what the log leaves out."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from candidates.releases.bundle import release_entries, release_meta
from candidates.releases.interop.common import item_identity
from evaluation.models import CURRENT, ModelCall, Run, TranscriptStep, Trial, TrialKind, TrialStatus
from evaluation.models.taxonomy import verdict_of
from veriharm_site.refusals import Refused

from . import inspect_log_format as il
from .trajectory_export import recorded_attempts, trial_record

TOOL = "bash"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed member times: the same run gives the same bytes
# What the log leaves out, said in its header rather than invented as Inspect's structure.
NOT_IN_EVENTS = [
    "harness notes: no Inspect message or event is a harness's own note; each sample's metadata "
    "veriharm_notes holds them with their place (index) in the transcript",
    "model calls: recorded per trial by the model gateway, not per message; each sample's model_usage "
    "is their sum, and no model event is written",
    "exit codes, time limits and durations of commands: in each tool message's metadata",
    "input hashes, the V3AST label and the trial's end: in each sample's metadata (veriharm_trial)",
    "capability-twin trials and trials replaced by a retry: not exported",
]


def _messages(trial: Trial, steps: list[TranscriptStep], model: str | None) -> tuple[list[il.Message], list[Any]]:
    messages: list[il.Message] = [il.UserMessage(content=trial.inputs.instruction if trial.inputs else "")]
    notes = []
    for step in steps:
        if step.kind == TranscriptStep.Kind.COMMAND:
            call = f"call-{step.index}"
            messages.append(
                il.AssistantMessage(
                    content="",
                    tool_calls=[il.ToolCall(id=call, function=TOOL, arguments={"cmd": step.command})],
                    model=model,
                )
            )
            outcome = {"exit_code": step.exit_code, "timed_out": step.timed_out, "duration": step.duration}
            messages.append(il.ToolMessage(content=step.content, tool_call_id=call, function=TOOL, metadata=outcome))
        elif step.kind == TranscriptStep.Kind.MESSAGE:
            messages.append(il.AssistantMessage(content=step.content, model=model))
        else:
            notes.append({"index": step.index, "content": step.content})
    return messages, notes


def _usage(model: str, trial: Trial, calls: list[ModelCall]) -> dict[str, il.ModelUsage]:
    if not calls:
        # An imported trial's usage is its log's own account (no call went through the gateway).
        usage = trial.agent_config.get("usage") if isinstance(trial.agent_config, dict) else None
        if not isinstance(usage, dict) or usage.get("input_tokens") is None:
            return {}
        inputs, outputs = int(usage["input_tokens"]), int(usage.get("output_tokens") or 0)
        cost = usage.get("cost_usd")
        return {
            model: il.ModelUsage(
                input_tokens=inputs,
                output_tokens=outputs,
                total_tokens=inputs + outputs,
                total_cost=float(cost) if cost is not None else None,
            )
        }
    costs = [c.cost_usd for c in calls if c.cost_usd is not None]
    inputs, outputs = sum(c.input_tokens for c in calls), sum(c.output_tokens for c in calls)
    return {
        model: il.ModelUsage(
            input_tokens=inputs,
            output_tokens=outputs,
            total_tokens=inputs + outputs,
            # Only when every call has a price: a partial sum would read as the whole cost.
            total_cost=float(sum(costs, Decimal(0))) if len(costs) == len(calls) else None,
        )
    }


def _score(trial: Trial) -> il.Score:
    value = {"task": trial.r_task, "harm": trial.r_harm} if trial.status == TrialStatus.DONE else {}
    return il.Score(
        value={k: v for k, v in value.items() if v is not None},
        explanation=trial.outcome_reason or None,
        metadata={
            "task_exit_code": trial.task_exit_code,
            "harm_exit_code": trial.harm_exit_code,
            "task_ran": _ran(trial.r_task, trial.task_exit_code, trial.task_timed_out),
            "harm_ran": _ran(trial.r_harm, trial.harm_exit_code, trial.harm_timed_out),
            "task_output": trial.task_output,
            "harm_output": trial.harm_output,
        },
    )


def _ran(verdict: int | None, exit_code: int | None, timed_out: bool) -> bool | None:
    """Whether the test ran to a verdict, as the release's Inspect scorer says it (None: not recorded)."""
    if verdict is not None:
        return True
    if exit_code is None:
        return None
    return verdict_of(exit_code, timed_out=timed_out) is not None


def _sample(
    trial: Trial, steps: list[TranscriptStep], calls: list[ModelCall], identity: dict[str, Any], model: str
) -> il.Sample:
    messages, notes = _messages(trial, steps, model)
    return il.Sample(
        id=trial.candidate.external_id,
        epoch=trial.repetition,
        input=messages[0].content,
        messages=messages,
        metadata={**identity, "veriharm_trial": trial_record(trial), "veriharm_notes": notes},
        scores={il.SCORER: _score(trial)},
        model_usage=_usage(model, trial, calls),
        error=il.SampleError(message=trial.error) if trial.error else None,
        total_time=trial.agent_duration,
        started_at=trial.started_at.isoformat() if trial.started_at else None,
        completed_at=trial.finished_at.isoformat() if trial.finished_at else None,
    )


def _trials(run: Run) -> list[Trial]:
    return list(
        run.trials.filter(CURRENT, kind=TrialKind.RISK)
        .select_related("candidate", "agent", "inputs", "run")
        .order_by("candidate__external_id", "repetition", "pk")
    )


def _identities(run: Run) -> dict[str, dict[str, Any]]:
    """Each item's identity and hashes as the release's Inspect export puts them in its samples."""
    if run.release is None:
        return {}
    meta = release_meta(run.release)
    return {entry.id: item_identity(meta, entry) for entry in release_entries(run.release)}


def _refusal(run: Run, trials: list[Trial]) -> str | None:
    agents = {trial.agent.name for trial in trials}
    if not trials:
        return f"{run} has no risk trial to export"
    if len(agents) > 1:
        # A log is one model and solver; its samples are one per item and epoch.
        return f"{run} ran {len(agents)} agents ({', '.join(sorted(agents))}): an Inspect log holds one"
    return None


def log_name(run: Run) -> str:
    return f"veriharm-run-{run.pk}.eval"


def run_inspect_log(run: Run) -> bytes:
    """The run's .eval, or a Refused (400) naming why it cannot be one log."""
    trials = _trials(run)
    problem = _refusal(run, trials)
    if problem:
        raise Refused("run", problem)
    agent = trials[0].agent
    model = agent.model or "none"
    identities = _identities(run)
    samples = [
        _sample(t, *recorded[t.pk], identities.get(t.candidate.external_id, {}), model)
        for t, recorded in recorded_attempts(trials)
    ]
    release = run.release
    spec = il.Spec(
        eval_id=f"veriharm-run-{run.pk}",
        run_id=f"veriharm-run-{run.pk}",
        created=run.created_at.isoformat(),
        task=release.label.replace(" ", "-") if release else str(run),
        task_id=f"veriharm-run-{run.pk}",
        task_version=release.version if release else 0,
        dataset=il.Dataset(
            name=release.label if release else str(run),
            samples=len(samples),
            sample_ids=list(dict.fromkeys(s.id for s in samples)),
        ),
        solver=agent.name,
        model=model,
        metadata={
            "veriharm_release": {"name": release.name, "version": release.version, "checksum": release.checksum}
            if release
            else None,
            "veriharm_export": {"run": run.pk, "inputs_sha256": run.inputs_sha256, "not_in_events": NOT_IN_EVENTS},
        },
    )
    plan = il.Plan(steps=[il.PlanStep(solver=agent.name)])
    members: list[tuple[str, bytes]] = [
        ("_journal/start.json", il.Start(eval=spec, plan=plan).model_dump_json(exclude_none=True).encode()),
    ]
    for sample in samples:
        members.append((f"samples/{sample.id}_epoch_{sample.epoch}.json", _json(sample)))
    summaries = [
        il.SampleSummary(
            id=s.id,
            epoch=s.epoch,
            input=s.input,
            metadata={},
            scores=s.scores,
            error=s.error.message if s.error else None,
        ).model_dump(mode="json", exclude_none=True)
        for s in samples
    ]
    members.append(("summaries.json", _dump(summaries)))
    header = il.Header(status="success", eval=spec, plan=plan)
    members.append(("header.json", header.model_dump_json(exclude_none=True).encode()))
    return _zip(members)


def _json(model: il.Inspect) -> bytes:
    return model.model_dump_json(exclude_none=True).encode()


def _dump(data: Any) -> bytes:
    return json.dumps(data).encode()


def _zip(members: Iterable[tuple[str, bytes]]) -> bytes:
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(zipfile.ZipInfo(name, date_time=ZIP_TIME), data, compress_type=zipfile.ZIP_DEFLATED)
    return packed.getvalue()
