"""An imported log written as one run of a frozen release: every sample checked against the
release's items first (release checksum, known ids, each item's hashes), then the run, its agent,
its trials and their steps in one transaction. A log that fails a check changes no row."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.db import transaction
from django.utils import timezone

from candidates.models import Release
from candidates.pipeline.format import sha256_text
from candidates.releases.interop.common import TEST_TIMEOUT_SECONDS
from candidates.releases.interop.harbor_export import release_harbor_tasks
from evaluation.agents.pinning import agent_pin_sha256
from evaluation.models.taxonomy import TrialEnd
from evaluation.runs.selection import release_candidates
from evaluation.trials import pinning
from evaluation.v3ast import outcomes

from ..models import Agent, AgentKind, Backend, Protocol, Run, TranscriptStep, Trial, TrialKind, TrialStatus
from .consistency import TIMEOUT_EXIT, contradictions
from .records import ITEM_HASHES, ImportedLog, ImportedSample, LogRefused

VERDICT_EXITS = (0, 1, 2)


def _expected_hashes(pinned: pinning.PinnedCandidate, line_sha256: str) -> dict[str, str]:
    parts = pinning.parts_for(pinned, TrialKind.RISK)
    return {
        "line_sha256": line_sha256,
        "instruction_sha256": sha256_text(parts.instruction),
        "task_test_sha256": sha256_text(parts.task_test),
        "harm_test_sha256": sha256_text(parts.harm_test or ""),
        "environment_sha256": sha256_text(parts.environment_json),
        "inputs_digest": parts.digest,
    }


def _refusals(
    release: Release, log: ImportedLog, items: Mapping[str, tuple[pinning.PinnedCandidate, str]]
) -> list[str]:
    if log.release_checksum != release.checksum:
        return [
            f"the log ran a release with checksum {log.release_checksum[:12]}…, not {release.label} "
            f"(checksum {release.checksum[:12]}…): import it into the release it ran"
        ]
    problems = []
    if not log.samples:
        problems.append(f"{log.file_name}: the log holds no sample")
    unknown = sorted({s.sample_id for s in log.samples} - set(items))
    if unknown:
        problems.append(f"sample ids not in {release.label}: {', '.join(unknown[:10])}")
    for sample in log.samples:
        if sample.sample_id not in items:
            continue
        if sample.metadata.get("release_checksum") != release.checksum:
            problems.append(f"{sample.sample_id} (epoch {sample.epoch}): its release checksum differs")
        expected = _expected_hashes(*items[sample.sample_id])
        differing = [name for name in ITEM_HASHES if sample.metadata.get(name) != expected[name]]
        if differing:
            problems.append(
                f"{sample.sample_id} (epoch {sample.epoch}): its {', '.join(differing)} differ from the release's item"
            )
        problems.extend(contradictions(sample))
    epochs = [(s.sample_id, s.epoch) for s in log.samples]
    if len(set(epochs)) != len(epochs):
        problems.append("the log holds the same sample and epoch twice")
    return problems


def _agent(log: ImportedLog) -> Agent:
    name = f"{log.harness}: {log.model} / {log.solver}"[:100]
    agent, _ = Agent.objects.get_or_create(
        name=name,
        defaults={
            "kind": AgentKind.IMPORTED,
            "model": log.model[:200],
            "harness": f"{log.harness}/{log.solver}"[:200],
            "config": {"harness": log.harness, "solver": log.solver},
            # Never offered for launching: it ran elsewhere.
            "active": False,
        },
    )
    if agent.kind != AgentKind.IMPORTED:
        raise LogRefused([f"an agent named {name!r} exists and was not imported: rename it first"])
    return agent


def _end(sample: ImportedSample) -> tuple[str, str, outcomes.Label]:
    """(status, end, label) by the rules of the in-app trials (`evaluation.taxonomy`)."""
    not_run = [
        (name, code)
        for name, code, ran in (
            ("V_harm", sample.harm_exit_code, sample.harm_ran),
            ("V_task", sample.task_exit_code, sample.task_ran),
        )
        if ran is False
    ]
    if not_run:
        # The export's verifier says a test did not run (no test collected, a start-up error, its time
        # limit): no verdict, whatever its exit code would mean for a test that ran.
        end = TrialEnd.TEST_TIME_LIMIT if any(code == TIMEOUT_EXIT for _, code in not_run) else TrialEnd.TEST_ERROR
        described = ", ".join(f"{name} did not run to a verdict (exit {code})" for name, code in not_run)
        return TrialStatus.UNRESOLVED, end, outcomes.Label(outcomes.Outcome.UNRESOLVED.value, described)
    if sample.error or sample.r_task is None or sample.r_harm is None:
        why = sample.error or "the log has no score of both tests for this sample"
        return TrialStatus.UNRESOLVED, TrialEnd.AGENT_ERROR, outcomes.label_unresolved(why)
    task_exit = sample.task_exit_code if sample.task_exit_code is not None else 1 - sample.r_task
    harm_exit = sample.harm_exit_code if sample.harm_exit_code is not None else 1 - sample.r_harm
    task = outcomes.Check(task_exit, task_exit == TIMEOUT_EXIT)
    harm = outcomes.Check(harm_exit, harm_exit == TIMEOUT_EXIT)
    if task_exit not in VERDICT_EXITS or harm_exit not in VERDICT_EXITS:
        end = TrialEnd.TEST_TIME_LIMIT if TIMEOUT_EXIT in (task_exit, harm_exit) else TrialEnd.TEST_ERROR
        described = f"{harm.describe('V_harm')}, {task.describe('V_task')}"
        return TrialStatus.UNRESOLVED, end, outcomes.Label(outcomes.Outcome.UNRESOLVED.value, described)
    agent = outcomes.AgentEnd(
        exit_code=0, timed_out=False, hit_step_limit=False, last_message=sample.last_message or ""
    )
    return TrialStatus.DONE, TrialEnd.VERDICT, outcomes.label_risk(task, harm, agent)


def _usage(sample: ImportedSample) -> str:
    if sample.input_tokens is None:
        return "the log records no model usage"
    cost = "" if sample.cost_usd is None else f", ${sample.cost_usd:.6f}"
    return f"model usage from the log: {sample.input_tokens} input and {sample.output_tokens} output tokens{cost}"


def _trial(run: Run, agent: Agent, pinned: pinning.PinnedCandidate, sample: ImportedSample, log: ImportedLog) -> Trial:
    status, end, label = _end(sample)
    done = status == TrialStatus.DONE
    config = {
        "name": agent.name,
        "kind": AgentKind.IMPORTED,
        "model": log.model,
        "harness": log.harness,
        "solver": log.solver,
        "source_sha256": log.file_sha256,
        "usage": {
            "input_tokens": sample.input_tokens,
            "output_tokens": sample.output_tokens,
            "cost_usd": sample.cost_usd,
        },
    }
    now = timezone.now()
    return Trial(
        run=run,
        candidate_id=pinned.candidate_id,
        agent=agent,
        kind=TrialKind.RISK,
        repetition=sample.epoch,
        candidate_revision=pinned.revision,
        inputs=pinning.inputs_store(pinning.parts_for(pinned, TrialKind.RISK)),
        agent_config=config,
        agent_config_sha256=agent_pin_sha256(config),
        system_identity=f"{log.harness} {log.harness_version}, sandbox {log.sandbox or 'per sample'}",
        status=status,
        end=end,
        r_task=sample.r_task if done else None,
        r_harm=sample.r_harm if done else None,
        outcome=label.outcome,
        outcome_reason=label.reason,
        agent_duration=sample.duration,
        agent_output=_usage(sample),
        task_exit_code=sample.task_exit_code,
        task_output=sample.task_output,
        harm_exit_code=sample.harm_exit_code,
        harm_output=sample.harm_output,
        error=sample.error,
        attempts=1,
        started_at=sample.started_at or now,
        finished_at=sample.finished_at or now,
    )


def _harbor_samples(release: Release, log: ImportedLog) -> ImportedLog:
    """A Harbor job's trials as samples of the release's items: each task named by the export and
    its content digest that of the export's task, so its tests and hashes are the release's."""
    tasks = release_harbor_tasks(release)
    problems, samples = [], []
    for sample in log.samples:
        if sample.sample_id not in tasks:
            problems.append(f"task {sample.sample_id!r} is not a task of {release.label}'s Harbor export")
            continue
        external_id, digest, identity = tasks[sample.sample_id]
        if sample.metadata.get("harbor_task_digest") != digest:
            problems.append(
                f"task {sample.sample_id}: Harbor's content digest differs from {release.label}'s export "
                "(another release, or edited task files)"
            )
            continue
        samples.append(replace(sample, sample_id=external_id, metadata={**sample.metadata, **identity}))
    if problems:
        raise LogRefused(problems)
    return replace(log, samples=samples, release_checksum=release.checksum)


def run_import(release_id: int, log: ImportedLog, *, user: Any = None, name: str = "") -> Run:
    """The log as a new run of the frozen release, or a LogRefused naming every difference."""
    release = Release.objects.filter(pk=release_id).first()
    if release is None or not release.is_frozen:
        raise LogRefused(["results come back into a frozen release: choose one"])
    stored = dict(release.items.values_list("external_id", "content_hash"))
    items = {pinned.external_id: (pinned, stored[pinned.external_id]) for pinned in release_candidates(release)}
    if log.harness == "harbor":
        log = _harbor_samples(release, log)
    problems = _refusals(release, log, items)
    if problems:
        raise LogRefused(problems)
    with transaction.atomic():
        agent = _agent(log)
        run = Run.objects.create(
            name=name or f"{log.task} ({log.harness}, {log.model})"[:200],
            created_by=user if getattr(user, "pk", None) else None,
            backend=Backend.EXTERNAL,
            protocol=Protocol.VERIHARM,
            repetitions=max(s.epoch for s in log.samples),
            # The export's tests ran with its limit, not this application's default.
            test_timeout=TEST_TIMEOUT_SECONDS,
            selection={"kind": "imported", "release": release.pk},
            release=release,
            release_checksum=release.checksum,
            source=log.source(),
            notes=f"Imported from {log.harness} log {log.file_name} (sha256 {log.file_sha256}).",
        )
        run.agents.set([agent])
        trials = [_trial(run, agent, items[s.sample_id][0], s, log) for s in log.samples]
        Trial.objects.bulk_create(trials)
        TranscriptStep.objects.bulk_create(
            TranscriptStep(
                trial=trial,
                attempt=1,
                index=index,
                kind=step.kind,
                content=step.content,
                command=step.command,
                exit_code=step.exit_code,
                timed_out=step.timed_out,
                duration=step.duration,
            )
            for trial, sample in zip(trials, log.samples, strict=True)
            for index, step in enumerate(sample.steps)
        )
        run.inputs_sha256 = pinning.run_inputs_sha256(
            (items[s.sample_id][0].external_id, t.candidate_revision, t.kind, t.inputs.digest, t.agent_config_sha256)
            for s, t in zip(log.samples, trials, strict=True)
            if t.inputs is not None
        )
        run.save(update_fields=["inputs_sha256"])
    return run
