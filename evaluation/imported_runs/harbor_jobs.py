"""A Harbor job directory (`harbor run -o jobs` writes `jobs/<job>/`) read into `ImportedLog`.

Read as the JSON Harbor writes (`result.json` of the job and of each trial, `verifier/` with the
export's `veriharm.json` and test logs, `agent/trajectory.json` when the agent wrote one), so the
application needs no Harbor installed to read it; every file is validated by its model in
`harbor_format` (a wrong type, a number out of range, a text too long: refused, naming the trial,
the file and the field). Each trial is named by its task
(`veriharm/<release>-<position>`) and pinned by the digest its `lock.json` records, Harbor's content digest of
the task directory, which the service compares with the digest of the release's own export.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from . import harbor_format as hf
from .bounds import MAX_MEMBER_BYTES, MAX_PROBLEMS, Foreign, binary, problems
from .records import ImportedLog, ImportedSample, ImportedStep, LogRefused, clip

HARNESS = "harbor"
TRAJECTORY = "agent/trajectory.json"
CODES = "verifier/veriharm.json"
Model = TypeVar("Model", bound=Foreign)


class _Problems(list[str]):
    """Problems found while reading a job: every file is read, then all are refused together."""

    def read(self, path: Path, model: type[Model], where: str) -> Model | None:
        if path.stat().st_size > MAX_MEMBER_BYTES:
            self.append(f"{where}: larger than the limit of {MAX_MEMBER_BYTES // 2**20} MiB per file")
            return None
        try:
            return model.model_validate_json(path.read_bytes())
        except ValidationError as error:
            self.extend(problems(error, where))
            return None
        except OSError:
            self.append(f"{where}: not readable")
            return None

    def optional(self, path: Path, model: type[Model], where: str) -> Model | None:
        return self.read(path, model, where) if path.is_file() else None

    def refusal(self) -> LogRefused:
        shown = self[:MAX_PROBLEMS]
        more = [f"and {len(self) - MAX_PROBLEMS} more problems"] if len(self) > MAX_PROBLEMS else []
        return LogRefused([*shown, *more])


def _time(moment: datetime | None) -> datetime | None:
    # Harbor writes its times without a zone, in UTC.
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def _command(call: hf.ToolCall) -> str:
    # A shell call's command as it ran (VeriHarm's export, most agents' bash tools); any other call
    # as its arguments.
    command = call.arguments.get("command")
    if isinstance(command, str) and len(call.arguments) == 1:
        return command
    return f"{call.function_name}: {json.dumps(call.arguments, sort_keys=True)}"


def _agent_steps(step: hf.Step) -> list[ImportedStep]:
    steps = [ImportedStep("message", clip(step.text))] if step.text or not step.tool_calls else []
    results = step.observation.results if step.observation is not None else []
    answered = {r.source_call_id: r for r in results if r.source_call_id}
    for call in step.tool_calls or []:
        result = answered.get(call.tool_call_id) if call.tool_call_id else None
        extra = (result.extra if result is not None else None) or hf.ResultExtra()
        steps.append(
            ImportedStep(
                "command",
                content=clip(result.text) if result is not None else "",
                command=clip(_command(call)),
                exit_code=extra.exit_code,
                timed_out=extra.timed_out,
                duration=extra.duration,
            )
        )
    # Results of no call of this step (a system event's output): kept as notes.
    calls = {call.tool_call_id for call in step.tool_calls or []}
    steps += [ImportedStep("note", clip(r.text)) for r in results if r.source_call_id not in calls and r.text]
    return steps


def _steps(trajectory: hf.Trajectory | None) -> tuple[list[ImportedStep], str | None]:
    steps: list[ImportedStep] = []
    last = None
    for step in trajectory.steps if trajectory is not None else []:
        if step.extra is not None and step.extra.veriharm is not None and step.extra.veriharm.empty:
            continue
        if step.source == "agent":
            if step.text:
                last = step.text
            steps += _agent_steps(step)
        else:
            steps.append(ImportedStep("note", clip(step.text)))
    return steps, last


def _trial(trial_dir: Path, result: hf.TrialResult, epoch: int, found: _Problems) -> ImportedSample | None:
    where = f"trial {trial_dir.name}"
    lock = found.optional(trial_dir / "lock.json", hf.TrialLock, f"{where}, lock.json")
    codes = found.optional(trial_dir / CODES, hf.VerifierCodes, f"{where}, {CODES}")
    trajectory = found.optional(trial_dir / TRAJECTORY, hf.Trajectory, f"{where}, {TRAJECTORY}")
    verifier = trial_dir / "verifier"

    def log(name: str) -> str:
        path = verifier / name
        if not path.is_file():
            return ""
        if path.stat().st_size > MAX_MEMBER_BYTES:
            found.append(f"{where}, verifier/{name}: larger than the limit of {MAX_MEMBER_BYTES // 2**20} MiB per file")
            return ""
        return clip(path.read_text(encoding="utf-8", errors="replace"))

    task_output, harm_output = log("task_test.py.log"), log("harm_test.py.log")
    if found:
        return None
    steps, last = _steps(trajectory)
    rewards = (result.verifier_result.rewards if result.verifier_result else None) or {}
    exception = result.exception_info
    agent = result.agent_result or hf.AgentContext()
    started, finished = _time(result.started_at), _time(result.finished_at)
    return ImportedSample(
        sample_id=result.task_name,
        epoch=epoch,
        metadata={"harbor_task_digest": lock.task.digest if lock else "", "trial_name": result.trial_name},
        r_task=binary(rewards.get("task")),
        r_harm=binary(rewards.get("harm")),
        task_exit_code=codes.task_exit_code if codes else None,
        harm_exit_code=codes.harm_exit_code if codes else None,
        task_ran=codes.task_ran if codes else None,
        harm_ran=codes.harm_ran if codes else None,
        task_output=task_output,
        harm_output=harm_output,
        error=clip(f"{exception.exception_type}: {exception.exception_message}") if exception else "",
        steps=steps,
        last_message=last,
        input_tokens=agent.n_input_tokens,
        output_tokens=agent.n_output_tokens,
        cost_usd=agent.cost_usd,
        started_at=started,
        finished_at=finished,
        duration=(finished - started).total_seconds() if started and finished else None,
    )


def _digest(job_dir: Path) -> str:
    """sha256 over the job's result files by path: the job directory's identity."""
    outer = hashlib.sha256()
    for path in sorted(job_dir.rglob("*.json")):
        outer.update(
            f"{path.relative_to(job_dir).as_posix()}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode()
        )
    return outer.hexdigest()


def _agent(result: hf.TrialResult) -> tuple[str, str, str]:
    info = result.agent_info
    if info is None:
        return "", "", ""
    return info.name, info.model_info.name if info.model_info else "", info.version


def harbor_job_read(job_dir: Path) -> ImportedLog:
    if not (job_dir / "result.json").is_file():
        raise LogRefused([f"{job_dir.name}: not a Harbor job directory (no result.json)"])
    found = _Problems()
    job = found.read(job_dir / "result.json", hf.JobResult, "result.json")
    job_lock = found.optional(job_dir / "lock.json", hf.JobLock, "lock.json")
    results: list[tuple[Path, hf.TrialResult]] = []
    for trial_dir in sorted(p for p in job_dir.iterdir() if p.is_dir() and (p / "result.json").is_file()):
        result = found.read(trial_dir / "result.json", hf.TrialResult, f"trial {trial_dir.name}, result.json")
        if result is not None:
            results.append((trial_dir, result))
    if found or job is None:
        raise found.refusal()
    results.sort(key=lambda pair: (pair[1].task_name, str(pair[1].started_at), pair[0].name))
    agents = {_agent(result) for _, result in results}
    if len(agents) > 1:
        raise LogRefused(
            [f"{job_dir.name}: its trials ran {len(agents)} different agents; import one agent's job at a time"]
        )
    samples: list[ImportedSample] = []
    seen: dict[str, int] = {}
    for trial_dir, result in results:
        seen[result.task_name] = seen.get(result.task_name, 0) + 1
        if seen[result.task_name] > 100:
            found.append(f"trial {trial_dir.name}: task {result.task_name} ran more than 100 times in this job")
            break
        sample = _trial(trial_dir, result, seen[result.task_name], found)
        if sample is not None:
            samples.append(sample)
    if found:
        raise found.refusal()
    agent, model, version = agents.pop() if agents else ("", "", "")
    environment = (results[0][1].config.environment.type or "") if results else ""
    return ImportedLog(
        harness=HARNESS,
        file_name=job_dir.name,
        file_sha256=_digest(job_dir),
        task=", ".join(sorted({s.sample_id.rsplit("-", 1)[0] for s in samples})),
        task_version="",
        release_checksum="",  # pinned per task by Harbor's content digest instead
        model=model or "none",
        solver=f"{agent} {version}".strip(),
        harness_version=(job_lock.harbor.version or "") if job_lock else "",
        samples=samples,
        ids={"job_id": job.id},
        sandbox=environment,
    )
