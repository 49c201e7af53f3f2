"""The demo's generation run (`make run` launches it beside the demo runs) comes out as docs/demo.md
promises: a real worker and bubblewrap sandboxes, the scripted demo proposer and judges against
demo-reckless and demo-careful."""

from __future__ import annotations

import pytest

from candidates.curation.search_report import search_report
from candidates.curation.selectors import search_rows
from candidates.models import Candidate, Search
from demo.generation import GENERATION_RUN, demo_generation_launch
from evaluation.generation.models import GenerationRun, GenerationStep
from evaluation.generation.scripted import PROPOSER_NAME
from evaluation.generation.states import RunStatus, SearchEnding, StepKind
from tests.evaluation.conftest import wait_until


@pytest.mark.django_db(transaction=True)
def test_the_demo_generation_run_keeps_at_once_after_feedback_and_not_at_all_and_launches_once(
    sandboxes_ready, celery_worker_thread, examples_imported, curator, client
):
    imported = set(Candidate.objects.values_list("external_id", flat=True))
    run = demo_generation_launch(backend="local")
    assert run is not None and run.demo and run.name == GENERATION_RUN
    wait_until(lambda: GenerationRun.objects.get(pk=run.pk).status != RunStatus.RUNNING, 600, "the demo generation run")
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    searches = {(s.source_task_id, s.agent.name): s for s in run.searches.select_related("agent")}

    # A success at once, one after two rounds of feedback, and searches that spend their budget.
    at_once = searches["bashbench-489407", "demo-reckless"]
    assert (at_once.ending, at_once.kept_iteration) == (SearchEnding.KEPT, 1)
    revised = searches["bashbench-261162", "demo-reckless"]
    assert revised.ending == SearchEnding.KEPT and revised.kept_iteration in (2, 3)
    assert revised.steps.filter(kind=StepKind.PROPOSAL).count() == revised.kept_iteration
    for task in ("bashbench-489407", "bashbench-261162"):
        spent = searches[task, "demo-careful"]
        assert (spent.ending, spent.kept_iteration, spent.candidate_external_id) == (
            SearchEnding.BUDGET_EXHAUSTED,
            None,
            "",
        )
        assert spent.steps.filter(kind=StepKind.PROPOSAL).count() == run.budget

    # The kept candidates are ranked beside the imported ones, marked as demo data; the imported are not.
    kept = {at_once.candidate_external_id, revised.candidate_external_id}
    generated = Candidate.objects.filter(external_id__in=kept)
    assert generated.count() == 2 and all(c.demo and c.rank is not None for c in generated)
    assert all(c.proposer == PROPOSER_NAME and c.judgements.count() == 2 for c in generated)
    assert not Candidate.objects.filter(external_id__in=imported, demo=True).exists()
    client.force_login(curator)
    ranking = client.get("/candidates/").content.decode()
    assert all(external_id in ranking for external_id in kept | imported)
    assert "Synthetic data: 2 candidates of this pool are synthetic" in ranking
    # Table 1: demo-reckless two successes (iterations 1 and 2 or 3), demo-careful none in two searches.
    rows = {r.target_agent: r for b in search_report(search_rows()).blocks for r in b.rows}
    reckless, careful = rows["demo-reckless"], rows["demo-careful"]
    assert (reckless.searches, reckless.successes, reckless.iteration_counts[0]) == (2, 2, 1)
    assert (careful.searches, careful.successes) == (2, 0)

    # Launched again (make run once more): nothing changes.
    counts = (GenerationRun.objects.count(), GenerationStep.objects.count(), Candidate.objects.count())
    assert demo_generation_launch(backend="local") is None
    assert (GenerationRun.objects.count(), GenerationStep.objects.count(), Candidate.objects.count()) == counts
    assert Search.objects.filter(target_agent__startswith="demo-").count() == 4
