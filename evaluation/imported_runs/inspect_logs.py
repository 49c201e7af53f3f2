"""An Inspect AI eval log (`.eval` or `.json`) read with `inspect_ai.log` into `ImportedLog`.

inspect-ai is a development requirement, not the runtime image's: without it, reading a log is
refused with a message saying so, and nothing else in the application needs it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from datetime import datetime
from typing import Any

from .records import ImportedLog, ImportedSample, ImportedStep, LogRefused, clip

SCORER = "veriharm_scorer"
SUFFIXES = (".eval", ".json")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        text = getattr(part, "text", None) or getattr(part, "reasoning", None)
        if text:
            parts.append(str(text))
    return "\n".join(parts)


def _steps(messages: list[Any]) -> tuple[list[ImportedStep], str | None]:
    steps: list[ImportedStep] = []
    last: str | None = None
    for message in messages:
        text = _text(message.content)
        if message.role == "assistant":
            last = text
            steps.append(ImportedStep("message", clip(text)))
            for call in message.tool_calls or []:
                arguments = call.arguments or {}
                command = arguments.get("cmd") or arguments.get("command") or json.dumps(arguments, sort_keys=True)
                steps.append(ImportedStep("command", command=clip(f"{call.function}: {command}")))
        elif message.role == "tool":
            steps.append(ImportedStep("note", clip(f"{message.function or 'tool'} output:\n{text}")))
        else:
            steps.append(ImportedStep("note", clip(f"{message.role}:\n{text}")))
    return steps, last


def _binary(value: Any) -> int | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number in (0.0, 1.0) else None


def _sample(sample: Any) -> ImportedSample:
    score = (sample.scores or {}).get(SCORER)
    value = score.value if score is not None and isinstance(score.value, dict) else {}
    extra = (score.metadata or {}) if score is not None else {}
    steps, last = _steps(list(sample.messages or []))
    usage = list((sample.model_usage or {}).values())
    costs = [u.total_cost for u in usage if getattr(u, "total_cost", None) is not None]
    return ImportedSample(
        sample_id=str(sample.id),
        epoch=int(sample.epoch),
        metadata=dict(sample.metadata or {}),
        r_task=_binary(value.get("task")),
        r_harm=_binary(value.get("harm")),
        task_exit_code=extra.get("task_exit_code"),
        harm_exit_code=extra.get("harm_exit_code"),
        task_output=clip(str(extra.get("task_output", ""))),
        harm_output=clip(str(extra.get("harm_output", ""))),
        error=clip(sample.error.message) if sample.error is not None else "",
        steps=steps,
        last_message=last,
        input_tokens=sum(u.input_tokens for u in usage) if usage else None,
        output_tokens=sum(u.output_tokens for u in usage) if usage else None,
        cost_usd=sum(costs) if costs else None,
        started_at=_time(getattr(sample, "started_at", None)),
        finished_at=_time(getattr(sample, "completed_at", None)),
        duration=sample.total_time,
    )


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def inspect_log_read(name: str, data: bytes) -> ImportedLog:
    """The log in `data` (a file called `name`), or a LogRefused saying why it cannot be read."""
    suffix = os.path.splitext(name)[1].lower()
    if suffix not in SUFFIXES:
        raise LogRefused([f"{name}: an Inspect log is a .eval or .json file"])
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise LogRefused(["reading Inspect logs needs inspect-ai, which this installation does not have"]) from None
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "log" + suffix)
        with open(path, "wb") as handle:
            handle.write(data)
        try:
            log = read_eval_log(path)
        except Exception as exc:  # the library raises many kinds on a damaged file
            raise LogRefused([f"{name}: not a readable Inspect eval log ({type(exc).__name__})"]) from None
    spec = log.eval
    release = (spec.metadata or {}).get("veriharm_release") or {}
    if not isinstance(release, dict) or not release.get("checksum"):
        raise LogRefused([f"{name}: the log's task is not an exported VeriHarm release (no release in its metadata)"])
    solver = spec.solver or (", ".join(step.solver for step in log.plan.steps) if log.plan else "")
    return ImportedLog(
        harness="inspect",
        file_name=os.path.basename(name),
        file_sha256=hashlib.sha256(data).hexdigest(),
        task=spec.task,
        task_version=str(spec.task_version),
        release_checksum=str(release["checksum"]),
        model=spec.model,
        solver=solver,
        harness_version=str((spec.packages or {}).get("inspect_ai", "")),
        samples=[_sample(sample) for sample in log.samples or []],
        ids={"eval_id": spec.eval_id, "run_id": spec.run_id, "task_id": spec.task_id, "status": log.status},
        sandbox=spec.sandbox.type if spec.sandbox is not None else "",
    )
