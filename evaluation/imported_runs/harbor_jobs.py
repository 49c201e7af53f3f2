"""A Harbor job directory (`harbor run -o jobs` writes `jobs/<job>/`) read into `ImportedLog`.

Read as the JSON Harbor writes (`result.json` of the job and of each trial, `verifier/` with the
export's `veriharm.json` and test logs, `agent/trajectory.json` when the agent wrote one), so the
application needs no Harbor installed to read it. Each trial is named by its task
(`veriharm/<release>-<position>`) and pinned by the digest its `lock.json` records, Harbor's content digest of
the task directory, which the service compares with the digest of the release's own export.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .records import ImportedLog, ImportedSample, ImportedStep, LogRefused, clip

HARNESS = "harbor"


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        raise LogRefused([f"{path.name}: not readable JSON"]) from None
    if not isinstance(data, dict):
        raise LogRefused([f"{path.name}: not a JSON object"])
    return data


def _time(value: Any) -> datetime | None:
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    # Harbor writes its times without a zone, in UTC.
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def _binary(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and value in (0, 1) else None


def _steps(trial_dir: Path) -> tuple[list[ImportedStep], str | None]:
    path = trial_dir / "agent" / "trajectory.json"
    if not path.is_file():
        return [], None
    try:
        trajectory = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return [ImportedStep("note", "agent/trajectory.json is not readable JSON")], None
    steps: list[ImportedStep] = []
    last = None
    for step in trajectory.get("steps", []) if isinstance(trajectory, dict) else []:
        message = step.get("message")
        text = message if isinstance(message, str) else json.dumps(message)
        if step.get("source") == "agent":
            last = text
        steps.append(ImportedStep("message" if step.get("source") == "agent" else "note", clip(text or "")))
        for call in step.get("tool_calls") or []:
            steps.append(ImportedStep("command", command=clip(json.dumps(call.get("arguments"), sort_keys=True))))
    return steps, last


def _task_digest(trial_dir: Path) -> str:
    # The trial's lock pins the task by Harbor's content digest (its Packager's, as `harbor sync`).
    lock = trial_dir / "lock.json"
    return str((_json(lock).get("task") or {}).get("digest", "")) if lock.is_file() else ""


def _trial(trial_dir: Path, result: dict[str, Any], epoch: int) -> ImportedSample:
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    verifier = trial_dir / "verifier"
    codes = _json(verifier / "veriharm.json") if (verifier / "veriharm.json").is_file() else {}
    exception = result.get("exception_info") or {}
    agent = result.get("agent_result") or {}
    steps, last = _steps(trial_dir)
    started, finished = _time(result.get("started_at")), _time(result.get("finished_at"))

    def log(name: str) -> str:
        path = verifier / name
        return clip(path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else ""

    return ImportedSample(
        sample_id=str(result.get("task_name", "")),
        epoch=epoch,
        metadata={"harbor_task_digest": _task_digest(trial_dir), "trial_name": result.get("trial_name")},
        r_task=_binary(rewards.get("task")),
        r_harm=_binary(rewards.get("harm")),
        task_exit_code=codes.get("task_exit_code"),
        harm_exit_code=codes.get("harm_exit_code"),
        task_output=log("task_test.py.log"),
        harm_output=log("harm_test.py.log"),
        error=clip(f"{exception.get('exception_type')}: {exception.get('exception_message')}") if exception else "",
        steps=steps,
        last_message=last,
        input_tokens=agent.get("n_input_tokens"),
        output_tokens=agent.get("n_output_tokens"),
        cost_usd=agent.get("cost_usd"),
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


def harbor_job_read(job_dir: Path) -> ImportedLog:
    if not (job_dir / "result.json").is_file():
        raise LogRefused([f"{job_dir.name}: not a Harbor job directory (no result.json)"])
    job = _json(job_dir / "result.json")
    results = []
    for trial_dir in sorted(p for p in job_dir.iterdir() if p.is_dir() and (p / "result.json").is_file()):
        results.append((trial_dir, _json(trial_dir / "result.json")))
    results.sort(key=lambda pair: (str(pair[1].get("task_name")), str(pair[1].get("started_at")), pair[0].name))
    samples, seen = [], {}  # type: ignore[var-annotated]
    for trial_dir, result in results:
        name = str(result.get("task_name", ""))
        seen[name] = seen.get(name, 0) + 1
        samples.append(_trial(trial_dir, result, seen[name]))
    agents = {
        (
            (r.get("agent_info") or {}).get("name", ""),
            ((r.get("agent_info") or {}).get("model_info") or {}).get("name") or "",
            (r.get("agent_info") or {}).get("version", ""),
        )
        for _, r in results
    }
    if len(agents) > 1:
        raise LogRefused(
            [f"{job_dir.name}: its trials ran {len(agents)} different agents; import one agent's job at a time"]
        )
    agent, model, version = agents.pop() if agents else ("", "", "")
    environment = ((results[0][1].get("config") or {}).get("environment") or {}).get("type", "") if results else ""
    return ImportedLog(
        harness=HARNESS,
        file_name=job_dir.name,
        file_sha256=_digest(job_dir),
        task=", ".join(sorted({s.sample_id.rsplit("-", 1)[0] for s in samples})),
        task_version="",
        release_checksum="",  # pinned per task by Harbor's content digest instead
        model=model or "none",
        solver=f"{agent} {version}".strip(),
        harness_version="",
        samples=samples,
        ids={"job_id": str(job.get("id", ""))},
        sandbox=environment,
    )
