"""The V3AST pages keep a run's results and a task's runs in the cache, and show every change to
them at once: a trial labelled, a trial added, a new candidate revision; and the labels are added
up in the database however many repetitions there are."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from candidates.models import Candidate
from evaluation.models import Run, Trial, TrialStatus
from evaluation.models.taxonomy import TrialEnd
from evaluation.runs.launch import run_rerun
from evaluation.v3ast import selectors
from evaluation.v3ast.views import task_urls
from tests.evaluation.v3ast_helpers import import_tasks, launch, record, system, trial_of

pytestmark = pytest.mark.django_db
STALE = '<span class="sub">stale</span>'


def cells(page: str) -> dict[str, str]:
    return dict(re.findall(r'data-testid="matrix-cell" data-agent="([\w-]+)" data-asr="([\d.]*)"', page))


def task_runs(page: str) -> list[tuple[str, str, str]]:
    return re.findall(r'data-testid="task-run" data-kind="(\w+)" data-repetition="(\d+)" data-outcome="(\w*)"', page)


@pytest.fixture
def one_system_run():
    """Task v1, one system, two repetitions; everything recorded but the risk run of repetition 2."""
    [task] = import_tasks({"id": "v1", "extra": {"attack_source": "direct"}})
    agent = system("s", "model-1", "harness-x")
    run = launch([task], [agent], repetitions=2, name="going")
    record(trial_of(run, task, agent, "risk", 1), 0, 1)  # safe, completed
    for repetition in (1, 2):
        record(trial_of(run, task, agent, "twin", repetition), 0)
    return run, agent


def test_a_label_recorded_after_a_page_was_cached_shows_at_once(one_system_run, curator_client):
    run, agent = one_system_run
    matrix = f"/evaluation/runs/{run.pk}/v3ast/"
    system_page = f"/evaluation/runs/{run.pk}/v3ast/systems/{agent.pk}/"
    assert cells(curator_client.get(matrix).content.decode()) == {"s": "0.0"}
    assert "<b>0.0%</b>" in curator_client.get(system_page).content.decode()
    assert selectors.run_results(run).timeout == selectors.OPEN_RUN_CACHE_SECONDS  # one trial still queued

    record(trial_of(run, "v1", agent, "risk", 2), 0, 0)  # the last run: compromised

    assert cells(curator_client.get(matrix).content.decode()) == {"s": "1.0"}
    page = curator_client.get(system_page).content.decode()
    assert re.search(r'data-testid="asr">.*?<b>100.0%</b>', page, re.S)
    assert 'data-outcome="compromised"' in page and "without a label yet" not in page
    api = curator_client.get(f"/api/evaluation/runs/{run.pk}/v3ast/systems/{agent.pk}/").json()
    assert api["tasks"][0]["risk"] == ["safe_completed", "compromised"] and api["pending_runs"] == 0
    assert selectors.run_results(run).timeout == selectors.CACHE_SECONDS  # finished: kept for a day


def test_the_task_page_of_a_running_task_is_not_cached_and_a_finished_one_is(one_system_run, curator_client):
    run, agent = one_system_run
    url = f"/evaluation/runs/{run.pk}/v3ast/tasks/v1/"
    candidate = Candidate.objects.get(external_id="v1")
    assert selectors.task_runs_version(run, candidate)[1] is None  # a trial still queued
    assert ("risk", "2", "") in task_runs(curator_client.get(url).content.decode())

    record(trial_of(run, "v1", agent, "risk", 2), 0, 0)
    page = curator_client.get(url).content.decode()
    assert ("risk", "2", "compromised") in task_runs(page) and STALE not in page

    # Served from the cache now: the trials and their steps are not read again.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        again = curator_client.get(url).content.decode()
    assert task_runs(again) == task_runs(page)
    assert not [q for q in queries.captured_queries if "evaluation_transcriptstep" in q["sql"]]

    # A new revision of the candidate makes every run of the page stale, cached or not.
    Candidate.objects.filter(pk=candidate.pk).update(revision=candidate.revision + 1)
    assert curator_client.get(url).content.decode().count(STALE) == 4


def test_a_re_run_is_a_run_of_its_own_with_its_own_results(one_system_run, admin_user, curator_client):
    run, agent = one_system_run
    record(trial_of(run, "v1", agent, "risk", 2), 0, 0)
    assert cells(curator_client.get(f"/evaluation/runs/{run.pk}/v3ast/").content.decode()) == {"s": "1.0"}

    again = run_rerun(run, created_by=admin_user)
    for repetition in (1, 2):
        record(trial_of(again, "v1", agent, "risk", repetition), 0, 1)
        record(trial_of(again, "v1", agent, "twin", repetition), 0)

    assert cells(curator_client.get(f"/evaluation/runs/{again.pk}/v3ast/").content.decode()) == {"s": "0.0"}
    assert cells(curator_client.get(f"/evaluation/runs/{run.pk}/v3ast/").content.decode()) == {"s": "1.0"}


def test_repetitions_past_63_are_added_up_in_masks_of_their_own(db):
    [task] = import_tasks({"id": "long"})
    agent = system("s", "model-1", "harness-x")
    run = launch([task], [agent], repetitions=70, name="long")
    compromised = {1, 63, 64, 70}
    done = {"status": TrialStatus.DONE, "end": TrialEnd.VERDICT}
    trials = Trial.objects.filter(run=run)
    trials.filter(kind="twin").update(**done, outcome="capable", r_task=1)
    trials.filter(kind="risk", repetition__in=compromised).update(**done, outcome="compromised", r_task=1, r_harm=1)
    trials.filter(kind="risk", repetition=65).update(
        status=TrialStatus.UNRESOLVED, end=TrialEnd.INFRASTRUCTURE, outcome="unresolved"
    )
    trials.filter(kind="risk", repetition__lte=69).exclude(repetition__in=compromised | {65, 69}).update(
        **done, outcome="safe_completed", r_task=1, r_harm=0
    )
    trials.filter(kind="risk", repetition=69).update(status=TrialStatus.CANCELLED, end=TrialEnd.CANCELLED)

    [result] = selectors.run_results(run).systems
    [runs_of_task] = result.tasks
    assert [r + 1 for r, o in enumerate(runs_of_task.risk) if o == "compromised"] == sorted(compromised)
    assert runs_of_task.risk[64] == "unresolved" and runs_of_task.risk[68] is None
    assert runs_of_task.twin_capable == [True] * 70 and runs_of_task.eligible
    assert result.pending_runs == 1 and result.scores.unresolved_runs == 1
    assert result.scores.per_repetition_asr[63] == 1.0 and result.scores.per_repetition_asr[68] is None
    assert result.scores.asr_at_n[0] == pytest.approx(4 / 68)  # 4 compromised of 68 resolved runs


def test_task_links_are_quoted_as_reverse_quotes_them():
    run = Run(pk=7)
    names = ["plain-1", "with space", "a/b", "100%", "q?x=1#f", "ünï", "semi;colon"]
    assert task_urls(run, names) == [reverse("evaluation:v3ast-task", args=[7, name]) for name in names]


def test_a_new_trial_in_the_run_changes_the_results_key(one_system_run):
    run, agent = one_system_run
    before = selectors.run_results(run).key
    cache.clear()
    assert selectors.run_results(run).key == before  # the key depends on the data, not on the cache
    Trial.objects.filter(run=run, kind="risk", repetition=2).update(
        status=TrialStatus.CANCELLED, end=TrialEnd.CANCELLED
    )
    assert selectors.run_results(run).key == before  # cancelling adds no label: the results are the same
    template = trial_of(run, "v1", agent, "risk", 1)
    Trial.objects.create(
        run=run,
        candidate=template.candidate,
        agent=agent,
        kind="risk",
        repetition=3,
        candidate_revision=template.candidate_revision,
    )
    assert selectors.run_results(run).key != before
