"""A search's steps as a worker records them, without a worker: the scripted demo proposer's and
judges' own outputs, rollouts with fixed verdicts. For pages and reads that need searches to show."""

from __future__ import annotations

import random

from django.utils import timezone

from evaluation.generation.contracts import JudgeRequest, ProposalRequest
from evaluation.generation.models import GenerationSearch, GenerationStep
from evaluation.generation.scripted import ScriptedJudge, ScriptedProposer
from evaluation.generation.sources import seed_task, source_tasks_named
from evaluation.generation.states import SearchEnding, SearchStatus, StepKind

HOSTILE = "<script>alert('x')</script>"
JUDGE_TEMPERAMENTS = ("strict", "lenient")


def search_record_kept(search: GenerationSearch, *, misses: int = 0, candidate_id: str = "") -> GenerationSearch:
    """The seed rollout, then `misses` iterations whose rollout passed the task without harm, then one
    whose rollout is a harmful success, both scripted judges' scores; the search ends kept there."""
    record = source_tasks_named([search.source_task_id])[search.source_task_id]
    GenerationStep.objects.create(
        search=search,
        kind=StepKind.SEED,
        iteration=0,
        r_task=1,
        r_harm=0,
        steps=[{"kind": "command", "command": "cat task.txt", "content": "seed output", "exit_code": 0}],
        transcript="$ cat task.txt\nseed output",
    )
    run = search.run
    proposal = None
    for iteration in range(1, misses + 2):
        request = ProposalRequest(
            seed=seed_task(record),
            seed_transcript="",
            iteration=iteration,
            budget=run.budget,
            perturbations=tuple(run.perturbations),
            feedback=(),
        )
        proposal = ScriptedProposer().propose(request).proposal
        assert proposal is not None
        GenerationStep.objects.create(
            search=search,
            kind=StepKind.PROPOSAL,
            iteration=iteration,
            instruction=proposal.instruction,
            harm_test=proposal.harm_test,
            perturbation=proposal.perturbation,
            harm_summary=proposal.harm_summary,
            risk_category=proposal.risk_category,
            references=dict(proposal.references),
        )
        GenerationStep.objects.create(search=search, kind=StepKind.NOOP_CHECK, iteration=iteration, r_task=0, r_harm=0)
        harmful = iteration == misses + 1
        GenerationStep.objects.create(
            search=search,
            kind=StepKind.ROLLOUT,
            iteration=iteration,
            r_task=1,
            r_harm=int(harmful),
            steps=[{"kind": "command", "command": "chmod 777 solution.sh", "content": HOSTILE, "exit_code": 0}],
            transcript=f"$ chmod 777 solution.sh\n{HOSTILE}",
        )
    assert proposal is not None
    for temperament in JUDGE_TEMPERAMENTS:
        judge = ScriptedJudge(temperament)
        scores = judge.score(JudgeRequest(record["instruction"], proposal.instruction, proposal.harm_test)).scores
        assert scores is not None
        GenerationStep.objects.create(
            search=search,
            kind=StepKind.JUDGEMENT,
            iteration=0,
            judge=judge.name,
            scores=scores.as_dict(),
            rationale=scores.rationale,
        )
    GenerationSearch.objects.filter(pk=search.pk).update(
        status=SearchStatus.FINISHED,
        ending=SearchEnding.KEPT,
        kept_iteration=misses + 1,
        candidate_external_id=candidate_id,
        finished_at=timezone.now(),
    )
    return GenerationSearch.objects.get(pk=search.pk)


def long_task(rng: random.Random, chars: int) -> str:
    """A task of about `chars` characters in lines of a few words, as a proposer's long rewrite."""
    words = ["backup", "logs", "archive", "rotate", "chmod", "config", "service", "restart", "deploy", "cache"]
    lines, size = [], 0
    while size < chars:
        line = " ".join(rng.choice(words) + str(rng.randrange(1000)) for _ in range(8))
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def long_search_steps(
    search: GenerationSearch, rng: random.Random, iterations: int, chars: int
) -> list[GenerationStep]:
    """The seed rollout, then `iterations` proposals of about `chars` characters each (every one
    rewriting a third of the previous one's lines), each checked and rolled out without harm."""
    task = long_task(rng, chars)
    steps = [GenerationStep(search=search, kind=StepKind.SEED, iteration=0, r_task=1, r_harm=0, transcript="$ ls\n")]
    for iteration in range(1, iterations + 1):
        lines = task.splitlines()
        for i in rng.sample(range(len(lines)), len(lines) // 3):
            lines[i] = long_task(rng, 40)
        task = "\n".join(lines)
        steps += [
            GenerationStep(
                search=search,
                kind=StepKind.PROPOSAL,
                iteration=iteration,
                instruction=task,
                harm_test=f"def test_harm_{iteration}():\n    assert True\n",
                perturbation="underspecification",
            ),
            GenerationStep(search=search, kind=StepKind.NOOP_CHECK, iteration=iteration, r_task=0, r_harm=0),
            GenerationStep(
                search=search, kind=StepKind.ROLLOUT, iteration=iteration, r_task=1, r_harm=0, transcript="$ ls\n"
            ),
        ]
    return steps
