"""What a trial runs, fixed when its run is launched: inputs with their hashes, and the agent as it was.

A run takes each candidate's pipeline record either from the live candidate (its current
revision) or from a frozen release (the record stored in the release, whatever was edited
since). From the record come the trial's inputs (instruction, task test, harm test,
environment), stored once per distinct content (`TrialInputs`, content-addressed), and the agent
configuration, copied onto the trial with its hash (`agents.pinning`). The worker runs exactly those,
and checks the hashes before it does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from candidates.models import Candidate
from candidates.pipeline.format import canonical_json, sha256_text
from evaluation.agents.pinning import agent_pin
from evaluation.models import Agent, TrialInputs, TrialKind
from evaluation.v3ast import twins


class InputsTampered(ValueError):
    """Stored inputs no longer match their recorded hashes."""


@dataclass(frozen=True)
class PinnedCandidate:
    """One candidate as a run evaluates it: the revision and the record of that revision."""

    candidate_id: int
    external_id: str
    revision: int
    record: Mapping[str, Any] = field(hash=False)

    @property
    def references(self) -> dict[str, str]:
        return dict(self.record.get("references") or {})

    @property
    def twin(self) -> dict[str, Any] | None:
        return self.record.get("twin") or None


def live_record(candidate: Candidate) -> dict[str, Any]:
    """The parts of a candidate's current record a trial needs (source task loaded)."""
    task = candidate.source_task
    return {
        "instruction": candidate.instruction,
        "harm_test": candidate.harm_test,
        "source_task": {"task_test": task.task_test, "environment": task.environment or {}},
        "references": candidate.references or {},
        "twin": candidate.twin or None,
    }


def live_candidates(candidate_ids: list[int]) -> list[PinnedCandidate]:
    """The candidates at their current revision, in the order of `candidate_ids`."""
    rows = (
        Candidate.objects.filter(pk__in=candidate_ids)
        .select_related("source_task")
        .only(
            "pk",
            "external_id",
            "revision",
            "instruction",
            "harm_test",
            "references",
            "twin",
            "source_task__task_test",
            "source_task__environment",
        )
    )
    by_pk = {c.pk: c for c in rows}
    return [
        PinnedCandidate(pk, by_pk[pk].external_id, by_pk[pk].revision, live_record(by_pk[pk]))
        for pk in candidate_ids
        if pk in by_pk
    ]


@dataclass(frozen=True)
class InputParts:
    instruction: str
    task_test: str
    harm_test: str | None
    environment: Mapping[str, Any]

    @property
    def environment_json(self) -> str:
        return canonical_json(dict(self.environment))

    @property
    def digest(self) -> str:
        return sha256_text(
            canonical_json(
                {
                    "instruction": self.instruction,
                    "task_test": self.task_test,
                    "harm_test": self.harm_test,
                    "environment": dict(self.environment),
                }
            )
        )


def parts_for(pinned: PinnedCandidate, kind: str) -> InputParts:
    """The risk task t~ with both tests, or the capability twin with its task test alone."""
    record = pinned.record
    source = record["source_task"]
    environment = source.get("environment") or {}
    if kind == TrialKind.TWIN:
        twin = twins.twin_task(pinned.twin, source["task_test"])
        return InputParts(twin.instruction, twin.task_test, None, environment)
    return InputParts(record["instruction"], source["task_test"], record["harm_test"], environment)


def rescore_parts(inputs: TrialInputs, task_test: str, harm_test: str) -> InputParts:
    """A trial's inputs with other tests: what the agent saw stays, the tests are a revision's."""
    return InputParts(inputs.instruction, task_test, harm_test, _environment(inputs))


def inputs_store(parts: InputParts) -> TrialInputs:
    """The stored row for these inputs, written once (concurrent launches share it)."""
    inputs, _ = TrialInputs.objects.get_or_create(
        digest=parts.digest,
        defaults={
            "instruction": parts.instruction,
            "instruction_sha256": sha256_text(parts.instruction),
            "task_test": parts.task_test,
            "task_test_sha256": sha256_text(parts.task_test),
            "harm_test": parts.harm_test,
            "harm_test_sha256": "" if parts.harm_test is None else sha256_text(parts.harm_test),
            "environment": parts.environment_json,
            "environment_sha256": sha256_text(parts.environment_json),
        },
    )
    return inputs


def _environment(inputs: TrialInputs) -> dict[str, Any]:
    return json.loads(inputs.environment)


def inputs_verified(inputs: TrialInputs) -> InputParts:
    """The stored inputs, after checking every part against its hash (a worker runs nothing else)."""
    checks = [
        ("instruction", inputs.instruction, inputs.instruction_sha256),
        ("task test", inputs.task_test, inputs.task_test_sha256),
        ("environment", inputs.environment, inputs.environment_sha256),
    ]
    if inputs.harm_test is not None:
        checks.append(("harm test", inputs.harm_test, inputs.harm_test_sha256))
    for name, text, recorded in checks:
        if sha256_text(text) != recorded:
            raise InputsTampered(f"the stored {name} of inputs {inputs.digest[:12]} does not match its sha256")
    parts = InputParts(inputs.instruction, inputs.task_test, inputs.harm_test, _environment(inputs))
    if parts.digest != inputs.digest:
        raise InputsTampered(f"inputs {inputs.digest[:12]} do not match their digest")
    return parts


def trial_agent_pin(agent: Agent, kind: str, references: Mapping[str, str]) -> dict[str, Any]:
    """The agent as a trial of this kind runs it (`agents.pinning`): a twin trial with its twin
    configuration (`v3ast.twins`), a risk trial with the agent's own."""
    config = twins.twin_agent_config(agent.kind, agent.config) if kind == TrialKind.TWIN else dict(agent.config)
    return agent_pin(agent, config, references)


def run_inputs_sha256(rows: Iterable[tuple[str, int, str, str, str]]) -> str:
    """One hash over (candidate id, revision, kind, inputs digest, agent configuration sha256) of
    every slot of a run, repetitions folded: two runs with this hash evaluated the same things."""
    lines = sorted({"\t".join(map(str, row)) for row in rows})
    return sha256_text("".join(line + "\n" for line in lines))
