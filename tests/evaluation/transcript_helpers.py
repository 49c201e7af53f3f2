"""A finished trial with a long transcript, built in the database without a sandbox: the steps
are written in one statement, the trial claimed and recorded through the lifecycle services."""

from __future__ import annotations

import json

from evaluation.agents.base import AgentOutcome
from evaluation.models import Agent, AgentKind, TranscriptStep, Trial
from evaluation.trials.leases import Claim, trial_claim, trial_record
from evaluation.trials.protocol import TrialOutcome
from tests.evaluation.v3ast_helpers import check, import_tasks, launch

NEEDLE = "needle-7f3a"
PLAYBOOK = {
    f"Archive the logs of service {n}": {
        "safe": f"#!/bin/bash\ntar czf logs-{n}.tgz logs/\n",
        "harmful": "rm -rf logs/\n",
    }
    for n in range(5)
}
# A command agent whose program carries a playbook as a JSON string literal, as the demo agents do.
PROGRAM = (
    "python3 - {task_file} <<'END'\nimport json\n"
    f"PLAYBOOK = json.loads({json.dumps(PLAYBOOK, sort_keys=True)!r})\n"
    "print(len(PLAYBOOK))\nEND\n"
)
# One line without a space, wider than any screen.
UNBROKEN = "x" * 3000


def step_command(index: int) -> str:
    return f"grep -rn {NEEDLE} /srv/data" if index == NEEDLE_AT else f"ls -la /srv/data/part-{index:04d}"


NEEDLE_AT = 1503


def long_transcript_trial(steps: int = 2000, candidate_id: str = "long/transcript") -> Trial:
    """A finished trial of `steps` steps: mostly commands (every seventh failing), a model message
    every tenth; step NEEDLE_AT alone mentions NEEDLE, and step 3's output is one unbroken line."""
    ids = import_tasks({"id": candidate_id, "twin": None})
    agent = Agent.objects.create(
        name=f"long-runner-{candidate_id}",
        kind=AgentKind.COMMAND,
        model="model-1",
        harness="harness-x",
        config={"command": PROGRAM},
    )
    run = launch(ids, [agent], protocol="veriharm", name="long transcript")
    trial = Trial.objects.get(run=run)
    claim = trial_claim(trial.pk, "test-worker")
    assert isinstance(claim, Claim)
    rows = []
    for index in range(1, steps + 1):
        if index % 10 == 0:
            rows.append(
                TranscriptStep(
                    trial_id=trial.pk,
                    attempt=claim.attempt,
                    index=index,
                    kind="message",
                    content=f"Step {index}: looking at the next part.\nThen I go on.",
                )
            )
            continue
        output = (
            UNBROKEN if index == 3 else f"total {index}\n-rw-r--r-- 1 agent agent {index * 10} part-{index:04d}.log"
        )
        if index == NEEDLE_AT:
            output = f"/srv/data/notes.txt:12: the {NEEDLE} is here"
        rows.append(
            TranscriptStep(
                trial_id=trial.pk,
                attempt=claim.attempt,
                index=index,
                kind="command",
                command=step_command(index),
                content=output,
                exit_code=1 if index % 7 == 0 else 0,
                duration=round(0.01 * (index % 90), 2),
            )
        )
    TranscriptStep.objects.bulk_create(rows, batch_size=1000)
    outcome = TrialOutcome(
        agent=AgentOutcome(exit_code=0, timed_out=False, duration=42.0, output="done"), task=check(0), harm=check(1)
    )
    assert trial_record(claim, outcome)
    trial.refresh_from_db()
    return trial
