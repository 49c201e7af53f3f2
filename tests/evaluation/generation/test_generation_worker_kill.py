"""A real `celery worker` process is SIGKILLed mid-search, in the target's rollout; a second one
finishes the search exactly once: one proposal, check and rollout per iteration, one candidate.
The workers keep the shipped broker options: the search comes back through the recovery sweep."""

from __future__ import annotations

import os
import signal
import time

import pytest
from django.db.models import Count

from candidates.models import Candidate, Search
from demo import checked as demo_checked
from evaluation.generation.launch import generation_launch
from evaluation.generation.models import GenerationSearch
from evaluation.generation.states import SearchEnding, SearchStatus, StepKind
from evaluation.models import Agent, AgentKind
from evaluation.tasks import generation_search_execute
from tests.evaluation.conftest import wait_until
from tests.evaluation.test_worker_kill import (
    LEASE_SECONDS,
    SWEEP_SECONDS,
    descendants,
    sandboxes_owned_by,
    start_worker,
    stop,
)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_search_finishes_exactly_once_after_its_worker_is_killed(sandboxes_ready, tmp_path):
    from veriharm_site.celery import app

    app.control.purge()
    harmful = next(t for t in demo_checked.TASKS if t.task_id == "489407").harmful
    # Slow enough to be killed in its rollout; then it does what the perturbed task lets it do.
    agent = Agent.objects.create(
        name="slow-reckless",
        kind=AgentKind.COMMAND,
        config={"command": 'sleep 6; bash -c "$HARM" < {task_file}', "env": {"HARM": harmful}},
        time_limit=60,
    )
    run = generation_launch(
        name="killed",
        selection={"kind": "ids", "ids": ["bashbench-489407"]},
        agent_ids=[agent.pk],
        proposers=[{"kind": "scripted"}],
        judges=[{"kind": "scripted", "temperament": "strict"}],
        budget=2,
        backend="local",
        reference_check=False,
    )
    search = run.searches.get()

    first = start_worker("first", tmp_path / "first.log")
    second = None
    try:
        wait_until(lambda: search.steps.filter(kind=StepKind.NOOP_CHECK, iteration=1).exists(), 120, "the no-op check")
        wait_until(lambda: sandboxes_owned_by(descendants(first.pid)), 30, "the rollout's sandbox")
        os.killpg(first.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        first.wait(timeout=10)
        assert GenerationSearch.objects.get(pk=search.pk).status == SearchStatus.RUNNING
        assert not search.steps.filter(kind=StepKind.ROLLOUT).exists()  # the rollout was cut off unrecorded

        second = start_worker("second", tmp_path / "second.log")
        wait_until(
            lambda: GenerationSearch.objects.get(pk=search.pk).status == SearchStatus.FINISHED, 180, "the second worker"
        )
        print(
            f"SIGKILL -> finished: {time.monotonic() - killed_at:.1f}s (lease {LEASE_SECONDS}s, sweep {SWEEP_SECONDS}s)"
        )
        done = GenerationSearch.objects.get(pk=search.pk)
        assert (done.ending, done.kept_iteration) == (SearchEnding.KEPT, 1)
        assert done.worker.startswith("second@")
        # One record per step: the seed, proposal 1, its check, its rollout, the judgement.
        counts = dict(done.steps.values_list("kind").annotate(n=Count("pk")))
        assert counts == {
            StepKind.SEED: 1,
            StepKind.PROPOSAL: 1,
            StepKind.NOOP_CHECK: 1,
            StepKind.ROLLOUT: 1,
            StepKind.JUDGEMENT: 1,
        }
        rollout = done.steps.get(kind=StepKind.ROLLOUT)
        assert (rollout.r_task, rollout.r_harm) == (1, 1)
        assert Candidate.objects.filter(external_id=done.candidate_external_id).count() == 1
        assert Search.objects.filter(target_agent="slow-reckless").count() == 1

        # Another delivery of the same task records nothing new.
        log = tmp_path / "second.log"
        finished_before = log.read_bytes().count(b"'finished'")
        generation_search_execute.delay(search.pk)
        wait_until(lambda: log.read_bytes().count(b"'finished'") > finished_before, 60, "the duplicate delivery")
        assert done.steps.count() == 5 and GenerationSearch.objects.get(pk=search.pk).finished_at == done.finished_at
    finally:
        stop(first)
        if second is not None:
            stop(second)
        print((tmp_path / "first.log").read_text(errors="replace")[-3000:])
        if second is not None:
            print((tmp_path / "second.log").read_text(errors="replace")[-3000:])


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_search_whose_message_was_lost_still_runs(sandboxes_ready, tmp_path):
    from veriharm_site.broker_messages import waiting_tasks
    from veriharm_site.celery import app

    app.control.purge()
    agent = Agent.objects.create(name="idle", kind=AgentKind.COMMAND, config={"command": "true {task_file}"})
    # A task outside the scripted catalogue: the seed rollout, then the proposer's error (cheap).
    run = generation_launch(
        name="lost",
        selection={"kind": "ids", "ids": ["bashbench-522703"]},
        agent_ids=[agent.pk],
        proposers=[{"kind": "scripted"}],
        judges=[{"kind": "scripted"}],
        backend="local",
    )
    search = run.searches.get()
    assert search.pk in waiting_tasks(app)["evaluation.generation_search_execute"]
    app.control.purge()  # the publish is lost

    worker = start_worker("after-loss", tmp_path / "worker.log")
    try:
        wait_until(
            lambda: GenerationSearch.objects.get(pk=search.pk).status == SearchStatus.FINISHED, 120, "the lost search"
        )
        done = GenerationSearch.objects.get(pk=search.pk)
        assert done.ending == SearchEnding.PROPOSER_ERROR
        assert list(done.steps.values_list("kind", flat=True)) == [StepKind.SEED, StepKind.PROPOSAL]
        assert b"published again 1 generation search" in (tmp_path / "worker.log").read_bytes()
    finally:
        stop(worker)
        print((tmp_path / "worker.log").read_text(errors="replace")[-3000:])
