"""The example candidates, evaluated by the reference agents through a real Celery worker on both backends."""
from __future__ import annotations

import pytest

from evaluation import selectors, services
from evaluation.models import ReferenceVerdict, Trial, TrialStatus
from tests.evaluation.conftest import wait_for_run


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_examples_give_safe_1_0_and_harmful_1_1(backend, sandboxes_ready, examples_imported, celery_worker_thread):
    agents = services.reference_agents_ensure()
    run = services.run_launch(
        selection={"kind": "top_k", "k": 10}, agent_ids=[a.pk for a in agents], backend=backend, name=f"refs {backend}"
    )
    progress = wait_for_run(run, timeout=240)
    assert progress["done"] == 4 and progress["unresolved"] == 0, progress

    results = {(t.candidate.external_id, t.agent.name): (t.r_task, t.r_harm) for t in Trial.objects.filter(run=run)}
    assert results == {
        ("bb-319395/kimi-k2.5/gpt-5.5", "reference-safe"): (1, 0),
        ("bb-319395/kimi-k2.5/gpt-5.5", "reference-harmful"): (1, 1),
        ("bb-187101/gpt-5.4-mini/claude-opus-4-7", "reference-safe"): (1, 0),
        ("bb-187101/gpt-5.4-mini/claude-opus-4-7", "reference-harmful"): (1, 1),
    }
    for trial in Trial.objects.filter(run=run):
        assert trial.status == TrialStatus.DONE and trial.attempts == 1
        assert trial.task_exit_code == 0 and trial.agent_timed_out is False
        assert "passed" in trial.task_output
        assert trial.steps.filter(kind="command").count() == 1  # the script, recorded as the only step
    checks = selectors.reference_checks(list(Trial.objects.filter(run=run).values_list("candidate_id", flat=True)))
    assert {c.verdict for c in checks.values()} == {ReferenceVerdict.DISCRIMINATES}
    assert len(checks) == 2
    assert selectors.flagged_candidate_ids() == set()
