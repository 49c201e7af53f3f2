"""A finished run of a frozen release as this application records one (trials pinned to the
release's inputs, transcript steps of each kind, model calls through the gateway), and a Harbor job
directory carrying trajectories, as `harbor run` leaves one: what the trajectory exports are tested on."""

from __future__ import annotations

import io
import json
import tarfile
from decimal import Decimal
from pathlib import Path

from candidates.models import Candidate, Release
from candidates.releases.interop.harbor_export import release_harbor_tasks
from evaluation.models import ModelCall, Run, TranscriptStep, Trial, TrialKind, TrialStatus
from evaluation.runs.selection import release_candidates
from evaluation.trials import pinning
from tests.factories import AgentFactory, RunFactory, TrialFactory

# (kind, content, command, exit_code, timed_out, duration) of each trial's transcript.
STEPS = [
    ("note", "sandbox ready: /app", "", None, False, None),
    ("message", "I will look at the files first.", "", None, False, None),
    ("command", "firmware.bin\nnotes.txt\n", "ls", 0, False, 0.25),
    ("command", "rm: cannot remove 'x': No such file", "rm x", 1, False, 0.5),
    ("command", "", "sleep 999", 124, True, 30.0),
    ("message", "Done: the workspace is tidy.", "", None, False, None),
]


def release_run(release: Release, changes: dict[int, dict[str, object]] | None = None) -> Run:
    """One agent, each item of the release once: the first item harmful (1, 1), the others safe
    (1, 0), each with the steps of STEPS; the first trial with two priced model calls. `changes`:
    fields of the trial at a position set otherwise (a finished trial's record never changes)."""
    agent = AgentFactory(name="scripted", model="gpt-test", harness="bash-loop")
    run = RunFactory(release=release, release_checksum=release.checksum, agents=[agent])
    for position, pinned in enumerate(release_candidates(release)):
        trial = TrialFactory(
            run=run,
            agent=agent,
            candidate=Candidate.objects.get(pk=pinned.candidate_id),
            candidate_revision=pinned.revision,
            inputs=pinning.inputs_store(pinning.parts_for(pinned, TrialKind.RISK)),
            **{
                "status": TrialStatus.DONE,
                "r_task": 1,
                "r_harm": 1 if position == 0 else 0,
                "agent_config_sha256": "a" * 64,
                **(changes or {}).get(position, {}),
            },
        )
        TranscriptStep.objects.bulk_create(
            TranscriptStep(
                trial=trial,
                attempt=1,
                index=index,
                kind=kind,
                content=content,
                command=command,
                exit_code=exit_code,
                timed_out=timed_out,
                duration=duration,
            )
            for index, (kind, content, command, exit_code, timed_out, duration) in enumerate(STEPS)
        )
        if position == 0:
            for tokens, cost in ((100, Decimal("0.0010")), (50, Decimal("0.0005"))):
                ModelCall.objects.create(
                    trial=trial,
                    attempt=1,
                    route="chat_completions",
                    model="gpt-test",
                    status_code=200,
                    input_tokens=tokens,
                    output_tokens=tokens // 10,
                    usage_reported=True,
                    latency=0.2,
                    cost_usd=cost,
                )
    return run


def recorded_steps(trial: Trial) -> list[tuple[object, ...]]:
    return [
        (s.kind, s.content, s.command, s.exit_code, s.timed_out, s.duration)
        for s in trial.steps.filter(attempt=trial.attempts).order_by("index")
    ]


def archive_members(data: bytes) -> dict[str, bytes]:
    """The archive's files by their path under its one top folder."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {
            member.name.split("/", 1)[1]: tar.extractfile(member).read()  # type: ignore[union-attr]
            for member in tar.getmembers()
            if member.isfile()
        }


def harbor_job(release: Release, trajectories: dict[str, bytes], into: Path) -> Path:
    """A Harbor job of the release's export whose trial of each item carries `trajectories[item id]`
    as its agent/trajectory.json, rewarded with the verdicts that trajectory records."""
    job = into / "2026-12-07__16-00-00"
    job.mkdir(parents=True)
    (job / "result.json").write_text(json.dumps({"id": "5b0c3b52-8a9e-4c1e-9d51-0b6f1c2e7a10"}))
    (job / "lock.json").write_text(json.dumps({"harbor": {"version": "0.25.0"}}))
    for task_name, (external_id, digest, _) in release_harbor_tasks(release).items():
        document = json.loads(trajectories[external_id])
        verdict = document["extra"]["veriharm"]
        rewards = {"task": verdict["r_task"], "harm": verdict["r_harm"]}
        trial = job / f"{task_name.rsplit('-', 1)[1]}__trial1"
        (trial / "agent").mkdir(parents=True)
        (trial / "verifier").mkdir()
        (trial / "agent" / "trajectory.json").write_bytes(trajectories[external_id])
        (trial / "lock.json").write_text(json.dumps({"task": {"digest": digest}}))
        (trial / "verifier" / "reward.json").write_text(json.dumps(rewards))
        result = {
            "task_name": task_name,
            "trial_name": trial.name,
            "agent_info": {"name": document["agent"]["name"], "version": document["agent"]["version"]},
            "verifier_result": {"rewards": rewards},
            "started_at": "2026-12-07T16:00:00",
            "finished_at": "2026-12-07T16:00:30",
        }
        (trial / "result.json").write_text(json.dumps(result))
    return job
