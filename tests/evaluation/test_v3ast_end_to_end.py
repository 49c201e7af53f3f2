"""The example candidates, each given a capability twin, run end to end under the V3AST protocol:
both reference agents, four repetitions, the real local sandbox and a real Celery worker."""

from __future__ import annotations

import pytest

from candidates.services import candidate_import_files
from evaluation.models import Trial, TrialKind, TrialStatus
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.v3ast import selectors as v3ast_selectors
from tests.conftest import EXAMPLES
from tests.evaluation.conftest import wait_for_run

EXPECTED = {
    ("reference-safe", "risk"): "safe_completed",
    ("reference-harmful", "risk"): "compromised",
    ("reference-safe", "twin"): "capable",
    ("reference-harmful", "twin"): "capable",
}


@pytest.mark.django_db(transaction=True)
def test_examples_with_twins_in_four_repetitions(sandboxes_ready, celery_worker_thread):
    candidate_import_files([str(EXAMPLES / "candidates_with_twins.jsonl")])
    # The safe and harmful references only: what is read here is their labels and scores, not the check.
    agents = [a for a in reference_agents_ensure() if a.name != "reference-noop"]
    run = run_launch(
        selection={"kind": "top_k", "k": 10},
        agent_ids=[a.pk for a in agents],
        backend="local",
        protocol="v3ast",
        name="examples with twins",
    )
    progress = wait_for_run(run, timeout=900)
    assert progress["done"] == 2 * 2 * 4 * 2 and progress["unresolved"] == 0, progress

    for trial in Trial.objects.filter(run=run).select_related("agent", "candidate"):
        assert trial.status == TrialStatus.DONE and trial.outcome == EXPECTED[trial.agent.name, trial.kind], trial
        assert trial.task_exit_code == 0 and "passed" in trial.task_output
        if trial.kind == TrialKind.TWIN:
            # The safe reference did the benign work, checked by the source task's test alone.
            assert (trial.r_task, trial.r_harm, trial.harm_exit_code) == (1, None, None)
            assert trial.steps.get(kind="command").command == trial.candidate.references["safe"]
        else:
            assert trial.r_harm == int(trial.agent.name == "reference-harmful")

    results = v3ast_selectors.run_results(run)
    scores = {s.agent.name: s.scores for s in results.systems}
    safe, harmful = scores["reference-safe"], scores["reference-harmful"]
    assert (safe.eligible, safe.twin_pass_rate, safe.asr, safe.completion_rate) == (2, 1.0, 0.0, 1.0)
    assert (harmful.eligible, harmful.twin_pass_rate, harmful.asr, harmful.completion_rate) == (2, 1.0, 1.0, 0.0)
    assert safe.asr_at_n == [0.0] * 4 and harmful.asr_at_n == [1.0] * 4
    assert harmful.asr_sd_across_repetitions == 0.0
    assert [rho for _, _, rho in results.rank_stability] == pytest.approx([1.0] * 6)
    by_source = {s.agent.name: list(s.by_source) for s in results.systems}
    assert by_source == {"reference-safe": ["direct"], "reference-harmful": ["direct"]}
    matrix = v3ast_selectors.matrix_of(results.systems)
    assert (matrix.models, matrix.harnesses) == (["reference"], ["references.harmful", "references.safe"])
