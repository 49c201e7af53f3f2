"""An Inspect AI eval log (`.eval` or `.json`) read into `ImportedLog`: its header with
`inspect_ai.log`, its samples one at a time through the typed models of `inspect_format`.

A .eval is a zip: its members are checked against the limits of `bounds` before any is read, and
each sample member is read and validated on its own, so a log of many samples never sits in memory
whole. A .json log is one document, bounded as one member is. inspect-ai is a development
requirement, not the runtime image's: without it, reading a log is refused with a message saying
so, and nothing else in the application needs it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from . import inspect_format as fi
from .bounds import MAX_MEMBER_BYTES, MAX_PROBLEMS, Location, binary, problems
from .records import ImportedLog, ImportedSample, ImportedStep, LogRefused, clip
from .unpacking import checked_zip

SUFFIXES = (".eval", ".json")
SAMPLES_DIR = "samples/"


def _command(call: fi.ToolCall) -> str:
    command = call.arguments.get("cmd") or call.arguments.get("command")
    if isinstance(command, str) and len(call.arguments) == 1:
        return command
    return f"{call.function}: {json.dumps(call.arguments, sort_keys=True)}"


def _steps(sample: fi.Sample) -> tuple[list[ImportedStep], str | None]:
    steps: list[ImportedStep] = []
    last: str | None = None
    # A command's step, filled in by the tool message that answers its call.
    calls: dict[str, int] = {}
    for message in sample.messages:
        text = message.text
        if message.role == "assistant":
            if text or not message.tool_calls:
                last = text
                steps.append(ImportedStep("message", clip(text)))
            for call in message.tool_calls or []:
                if call.id:
                    calls[call.id] = len(steps)
                steps.append(ImportedStep("command", command=clip(_command(call))))
        elif message.role == "tool" and message.tool_call_id in calls:
            outcome = message.metadata or fi.ToolOutcome()
            at = calls.pop(message.tool_call_id)
            steps[at] = replace(
                steps[at],
                content=clip(text),
                exit_code=outcome.exit_code,
                timed_out=outcome.timed_out,
                duration=outcome.duration,
            )
        elif message.role == "tool":
            steps.append(ImportedStep("note", clip(f"{message.function or 'tool'} output:\n{text}")))
        elif message.role == "user" and isinstance(sample.input, str) and text == sample.input:
            continue  # the instruction: the trial's pinned input, not a step of its transcript
        else:
            steps.append(ImportedStep("note", clip(f"{message.role}:\n{text}")))
    # Harness notes have no Inspect message: VeriHarm's export keeps them, with their place, in metadata.
    notes = sample.metadata.veriharm_notes if sample.metadata is not None else []
    for note in sorted(notes, key=lambda n: n.index):
        steps.insert(min(note.index, len(steps)), ImportedStep("note", clip(note.content)))
    return steps, last


def _sample(sample: fi.Sample) -> ImportedSample:
    score = sample.scores.veriharm_scorer if sample.scores is not None else None
    value = score.value if score is not None else fi.ScorerValue()
    extra = (score.metadata if score is not None else None) or fi.ScorerMetadata()
    steps, last = _steps(sample)
    usage = list(sample.model_usage.values())
    costs = [u.total_cost for u in usage if u.total_cost is not None]
    return ImportedSample(
        sample_id=str(sample.id),
        epoch=sample.epoch,
        metadata=dict(sample.metadata.model_extra or {}) if sample.metadata is not None else {},
        r_task=binary(value.task),
        r_harm=binary(value.harm),
        task_exit_code=extra.task_exit_code,
        harm_exit_code=extra.harm_exit_code,
        task_ran=extra.task_ran,
        harm_ran=extra.harm_ran,
        task_output=clip(extra.task_output),
        harm_output=clip(extra.harm_output),
        error=clip(sample.error.message) if sample.error is not None else "",
        steps=steps,
        last_message=last,
        input_tokens=sum(u.input_tokens for u in usage) if usage else None,
        output_tokens=sum(u.output_tokens for u in usage) if usage else None,
        cost_usd=sum(costs) if costs else None,
        started_at=sample.started_at,
        finished_at=sample.completed_at,
        duration=sample.total_time,
    )


def _eval_samples(name: str, archive: zipfile.ZipFile) -> Iterator[ImportedSample]:
    """The .eval's samples, one member at a time (a member Inspect logged twice is read once)."""
    found: list[str] = []
    for member in dict.fromkeys(archive.namelist()):
        if not (member.startswith(SAMPLES_DIR) and member.endswith(".json")):
            continue
        try:
            raw = archive.read(member)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError):
            raise LogRefused([f"{name}: {member} is damaged"]) from None
        try:
            yield _sample(fi.Sample.model_validate_json(raw))
        except ValidationError as error:
            try:
                label = fi.SampleKey.model_validate_json(raw).label(member)
            except ValidationError:
                label = member
            found += problems(error, f"{name}: {label}")
            if len(found) >= MAX_PROBLEMS:
                break
    if found:
        raise LogRefused(found)


def _json_samples(name: str, data: bytes) -> Iterator[ImportedSample]:
    try:
        log = fi.JsonLog.model_validate_json(data)
    except ValidationError as error:
        try:
            keys = fi.JsonLogKeys.model_validate_json(data).samples or []
        except ValidationError:
            keys = []

        def record(location: Location) -> tuple[str, Location]:
            if len(location) < 2 or location[0] != "samples" or not isinstance(location[1], int):
                return "", location
            index = location[1]
            fallback = f"samples[{index}]"
            return (keys[index].label(fallback) if index < len(keys) else fallback), location[2:]

        raise LogRefused(problems(error, name, record)) from None
    for sample in log.samples or []:
        yield _sample(sample)


def _header(name: str, log: Any) -> fi.Header:
    spec = log.eval
    release = (spec.metadata or {}).get("veriharm_release") or {}
    if not isinstance(release, dict) or not release.get("checksum"):
        raise LogRefused([f"{name}: the log's task is not an exported VeriHarm release (no release in its metadata)"])
    solver = spec.solver or (", ".join(step.solver for step in log.plan.steps) if log.plan else "")
    fields = {
        "task": spec.task,
        "task_version": str(spec.task_version),
        "release_checksum": release["checksum"],
        "model": spec.model,
        "solver": solver,
        "harness_version": str((spec.packages or {}).get("inspect_ai", "")),
        "eval_id": spec.eval_id,
        "run_id": spec.run_id,
        "task_id": spec.task_id,
        "status": log.status,
        "sandbox": spec.sandbox.type if spec.sandbox is not None else "",
    }
    try:
        return fi.Header.model_validate(fields)
    except ValidationError as error:
        raise LogRefused(problems(error, f"{name}: the log's header")) from None


def inspect_log_read(name: str, data: bytes) -> ImportedLog:
    """The log in `data` (a file called `name`), or a LogRefused saying why it cannot be read."""
    suffix = os.path.splitext(name)[1].lower()
    if suffix not in SUFFIXES:
        raise LogRefused([f"{name}: an Inspect log is a .eval or .json file"])
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise LogRefused(["reading Inspect logs needs inspect-ai, which this installation does not have"]) from None
    archive = checked_zip(name, data) if suffix == ".eval" else None
    if archive is None and len(data) > MAX_MEMBER_BYTES:
        raise LogRefused(
            [
                f"{name}: a .json log is read whole, up to the limit of {MAX_MEMBER_BYTES // 2**20} MiB; larger, use .eval"
            ]
        )
    try:
        if archive is not None:
            # From the bytes, Inspect reads the zip with Python's zipfile, bounded by the sizes checked.
            log = read_eval_log(io.BytesIO(data), header_only=True, format="eval")
        else:
            with tempfile.TemporaryDirectory() as scratch:
                path = os.path.join(scratch, "log.json")
                with open(path, "wb") as handle:
                    handle.write(data)
                log = read_eval_log(path, header_only=True)  # streams the header alone
    except Exception as exc:  # the library raises many kinds on a damaged file
        raise LogRefused([f"{name}: not a readable Inspect eval log ({type(exc).__name__})"]) from None
    header = _header(name, log)
    samples = _eval_samples(name, archive) if archive is not None else _json_samples(name, data)
    return ImportedLog(
        harness="inspect",
        file_name=os.path.basename(name)[:200],
        file_sha256=hashlib.sha256(data).hexdigest(),
        task=header.task,
        task_version=header.task_version,
        release_checksum=header.release_checksum,
        model=header.model,
        solver=header.solver,
        harness_version=header.harness_version,
        samples=list(samples),
        ids={"eval_id": header.eval_id, "run_id": header.run_id, "task_id": header.task_id, "status": header.status},
        sandbox=header.sandbox,
    )
