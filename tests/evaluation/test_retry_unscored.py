"""Retrying the trials of a run that ended without a verdict: new trials in the same run, the scored
ones untouched, the old attempts kept, each slot counted once."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from evaluation.agents.base import AgentError, AgentOutcome
from evaluation.models import Trial, TrialStatus
from evaluation.models.taxonomy import TrialEnd
from evaluation.results import selectors
from evaluation.runs import metric_selectors
from evaluation.runs import selectors as run_selectors
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_cancel, run_launch
from evaluation.runs.retries import run_retry_unscored
from evaluation.sandbox.base import SandboxError
from evaluation.trials import execution
from evaluation.trials.leases import trial_claim, trial_fail, trial_record
from evaluation.trials.protocol import TrialOutcome, VerifierOutcome
from tests.evaluation.conftest import wait_for_run

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"


def outcome(r_task: int, r_harm: int) -> TrialOutcome:
    def test(passed: int) -> VerifierOutcome:
        return VerifierOutcome(
            passed=bool(passed), exit_code=0 if passed else 1, timed_out=False, duration=0.1, output=""
        )

    return TrialOutcome(agent=AgentOutcome(0, False, 1.0, ""), task=test(r_task), harm=test(r_harm))


def rows(run) -> list[dict[str, Any]]:
    return list(Trial.objects.filter(run=run).order_by("pk").values())


@pytest.fixture
def ended(examples_imported):
    """Six trials: the safe reference scored twice, the harmful one lost to the sandbox twice, the
    no-op's agent failing twice."""
    agents = reference_agents_ensure()
    run = run_launch(
        selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[a.pk for a in agents], repetitions=2, backend="local"
    )
    for trial in Trial.objects.filter(run=run):
        claim = trial_claim(trial.pk, "w1")
        name = trial.agent.name
        if name == "reference-safe":
            trial_record(claim, outcome(1, 0))
        elif name == "reference-harmful":
            trial_fail(claim, "SandboxError: the daemon went away", retryable=False)
        else:
            trial_fail(claim, "the harness crashed", retryable=False, end=TrialEnd.AGENT_ERROR)
    return run


def test_the_form_lists_each_ending_without_a_verdict_with_its_count(ended, client, admin_user):
    client.force_login(admin_user)
    page = client.get(reverse("evaluation:run-retry", args=[ended.pk])).content.decode()
    assert 'data-end="infrastructure">2<' in page and 'data-end="agent_error">2<' in page
    assert 'data-end="test_error">0<' in page and 'data-end="budget">0<' in page
    assert 'value="verdict"' not in page and 'value="cancelled"' not in page
    run_page = client.get(reverse("evaluation:run", args=[ended.pk])).content.decode()
    assert "Retry unscored (4)" in run_page


def test_retrying_one_ending_adds_trials_beside_the_old_and_touches_no_other(ended, admin_client_):
    before = rows(ended)
    answer = admin_client_.post(f"/api/evaluation/runs/{ended.pk}/retry/", {"ends": ["infrastructure"]}, format="json")
    assert answer.status_code == 201, answer.content
    assert answer.json()["retried"] == {"infrastructure": 2}
    after = rows(ended)
    # Every earlier row is exactly as it was: the scored ones and the retried ones alike.
    assert after[: len(before)] == before
    new = Trial.objects.filter(pk__in=answer.json()["trials"]).select_related("agent", "retry_of")
    assert {(t.agent.name, t.status, t.retry, t.retry_of.end) for t in new} == {
        ("reference-harmful", TrialStatus.QUEUED, 1, TrialEnd.INFRASTRUCTURE)
    }
    assert all(t.inputs_id == t.retry_of.inputs_id and t.repetition == t.retry_of.repetition for t in new)
    progress = run_selectors.run_progress(ended)
    # Each slot once: six slots, the two retried ones queued again.
    assert (progress["total"], progress["done"], progress["queued"], progress["unresolved"], progress["retried"]) == (
        6,
        2,
        2,
        2,
        2,
    )
    assert progress["ends"][TrialEnd.INFRASTRUCTURE] == 0 and progress["ends"][TrialEnd.AGENT_ERROR] == 2


def test_a_second_submit_retries_nothing_more(ended, admin_client_, client, admin_user):
    first = admin_client_.post(f"/api/evaluation/runs/{ended.pk}/retry/", {"ends": ["infrastructure"]}, format="json")
    assert first.status_code == 201
    before = rows(ended)
    again = admin_client_.post(f"/api/evaluation/runs/{ended.pk}/retry/", {"ends": ["infrastructure"]}, format="json")
    assert again.status_code == 409 and "nothing to retry" in again.json()["errors"][0]["message"]
    client.force_login(admin_user)
    page = client.post(reverse("evaluation:run-retry", args=[ended.pk]), {"ends": ["infrastructure"]})
    assert page.status_code == 409 and "nothing to retry" in page.content.decode()
    assert rows(ended) == before


@pytest.mark.parametrize("ends, named", [(["verdict"], "'verdict'"), (["infrastructure", "bogus"], "'bogus'")])
def test_an_ending_with_a_verdict_or_no_ending_is_refused_by_name(ended, admin_client_, ends, named):
    before = rows(ended)
    answer = admin_client_.post(f"/api/evaluation/runs/{ended.pk}/retry/", {"ends": ends}, format="json")
    assert answer.status_code == 400
    error = answer.json()["errors"][0]
    assert error["field"] == "ends" and named in error["message"]
    assert rows(ended) == before


def test_the_page_refuses_an_unknown_ending_by_name(ended, client, admin_user):
    client.force_login(admin_user)
    before = rows(ended)
    answer = client.post(reverse("evaluation:run-retry", args=[ended.pk]), {"ends": ["verdict"]})
    assert answer.status_code == 400 and "verdict is not one of the available choices" in answer.content.decode()
    assert client.post(reverse("evaluation:run-retry", args=[ended.pk]), {}).status_code == 400
    assert rows(ended) == before


def test_a_cancelled_run_is_not_retried(ended, admin_client_):
    run_cancel(ended)
    before = rows(ended)
    answer = admin_client_.post(f"/api/evaluation/runs/{ended.pk}/retry/", {"ends": ["agent_error"]}, format="json")
    assert answer.status_code == 409 and "cancelled" in answer.json()["errors"][0]["message"]
    assert rows(ended) == before


def test_metrics_count_each_slot_once_by_its_latest_trial(ended):
    harmful = next(a for a in metric_selectors.run_metrics(ended) if a.agent.name == "reference-harmful")
    assert harmful.unresolved == 2 and harmful.overall is None
    retried = run_retry_unscored(ended, [TrialEnd.INFRASTRUCTURE])
    for pk in retried.trial_ids:
        trial_record(trial_claim(pk, "w2"), outcome(1, 1))
    harmful = next(a for a in metric_selectors.run_metrics(ended) if a.agent.name == "reference-harmful")
    assert harmful.unresolved == 0 and harmful.overall is not None
    assert (harmful.overall.n_trials, harmful.overall.n_candidates) == (2, 1)
    assert run_selectors.runs_list().get(pk=ended.pk).n_trials == 6


class Provoked:
    """Fails the trials of the agents named in `failing` the way it says, in the worker's own process,
    inside the sandbox run: a lost sandbox (infrastructure) or a crashed agent (agent error)."""

    def __init__(self) -> None:
        self.failing: dict[str, str] = {}
        self._doomed: dict[int, str] = {}
        self._runner = execution._runner
        self._run = execution.trial_run

    def runner(self, trial: Trial) -> Any:
        built = self._runner(trial)
        if trial.agent.name in self.failing:
            self._doomed[id(built)] = self.failing[trial.agent.name]
        return built

    def run(self, backend: Any, spec: Any, agent: Any, **kwargs: Any) -> TrialOutcome:
        how = self._doomed.pop(id(agent), None)
        if how == "sandbox":
            raise SandboxError("the sandbox daemon went away")
        if how == "agent":
            raise AgentError("the harness crashed")
        return self._run(backend, spec, agent, **kwargs)


@pytest.mark.django_db(transaction=True)
def test_retried_trials_get_their_verdict_with_a_real_worker(
    sandboxes_ready, examples_imported, celery_worker_thread, monkeypatch, settings, client, admin_user
):
    settings.VERIHARM_TRIAL_MAX_ATTEMPTS = 1  # the first failure gives up, as retries after it would
    provoked = Provoked()
    provoked.failing = {"reference-harmful": "sandbox", "reference-noop": "agent"}
    monkeypatch.setattr(execution, "_runner", provoked.runner)
    monkeypatch.setattr(execution, "trial_run", provoked.run)
    agents = reference_agents_ensure()
    run = run_launch(
        selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[a.pk for a in agents], repetitions=2, backend="local"
    )
    progress = wait_for_run(run, timeout=240)
    assert progress["done"] == 2 and progress["ends"][TrialEnd.INFRASTRUCTURE] == 2, progress
    assert progress["ends"][TrialEnd.AGENT_ERROR] == 2
    scored = list(Trial.objects.filter(run=run, status=TrialStatus.DONE).order_by("pk").values())
    assert {(t["r_task"], t["r_harm"]) for t in scored} == {(1, 0)}
    lost = list(Trial.objects.filter(run=run, end=TrialEnd.INFRASTRUCTURE).order_by("pk"))

    # The sandbox is back: retry the trials it lost, only those.
    provoked.failing = {}
    client.force_login(admin_user)
    answer = client.post(reverse("evaluation:run-retry", args=[run.pk]), {"ends": ["infrastructure"]})
    assert answer.status_code == 302
    progress = wait_for_run(run, timeout=240)
    assert (progress["total"], progress["done"], progress["unresolved"], progress["retried"]) == (6, 4, 2, 2)
    assert progress["ends"][TrialEnd.INFRASTRUCTURE] == 0 and progress["ends"][TrialEnd.AGENT_ERROR] == 2
    assert list(Trial.objects.filter(pk__in=[t["id"] for t in scored]).order_by("pk").values()) == scored
    for old in lost:
        retry = Trial.objects.get(retry_of=old)
        assert (retry.status, retry.r_task, retry.r_harm, retry.repetition) == (
            TrialStatus.DONE,
            1,
            1,
            old.repetition,
        )
        # The old attempt stays readable, pointing at its retry, and the retry back at it.
        old_page = client.get(reverse("evaluation:trial", args=[old.pk])).content.decode()
        assert "SandboxError: the sandbox daemon went away" in old_page
        assert f'Retried as <a href="{reverse("evaluation:trial", args=[retry.pk])}">' in old_page
        assert (
            f'of <a href="{reverse("evaluation:trial", args=[old.pk])}">trial {old.pk}</a>'
            in client.get(reverse("evaluation:trial", args=[retry.pk])).content.decode()
        )
    harmful = next(a for a in metric_selectors.run_metrics(run) if a.agent.name == "reference-harmful")
    assert harmful.overall is not None and harmful.overall.n_trials == 2 and harmful.unresolved == 0

    # Then the agent errors: every slot has its verdict, and the no-op's check completes.
    answer = client.post(reverse("evaluation:run-retry", args=[run.pk]), {"ends": ["agent_error"]})
    progress = wait_for_run(run, timeout=240)
    assert (progress["total"], progress["done"], progress["unresolved"], progress["retried"]) == (6, 6, 0, 4)
    assert set(
        Trial.objects.filter(run=run, agent__name="reference-noop", retry=1).values_list("r_task", "r_harm")
    ) == {(0, 0)}
    assert selectors.reference_check_for(scored[0]["candidate_id"]).verdict == "discriminates"


def test_the_v3ast_reading_takes_the_retry_once_it_has_its_label(db, curator_client):
    from tests.evaluation.v3ast_helpers import import_tasks, launch, record, system, trial_of

    [task] = import_tasks({"id": "v1", "extra": {"attack_source": "direct"}})
    agent = system("s", "model-1", "harness-x")
    run = launch([task], [agent], repetitions=2, name="retried")
    record(trial_of(run, task, agent, "risk", 1), 0, 1)  # safe, completed
    for repetition in (1, 2):
        record(trial_of(run, task, agent, "twin", repetition), 0)
    record(trial_of(run, task, agent, "risk", 2), 5, 0)  # V_task gave no verdict: UNRESOLVED
    api = f"/api/evaluation/runs/{run.pk}/v3ast/systems/{agent.pk}/"
    assert curator_client.get(api).json()["tasks"][0]["risk"] == ["safe_completed", "unresolved"]  # now cached

    [retry] = run_retry_unscored(run, [TrialEnd.TEST_ERROR]).trial_ids
    record(Trial.objects.get(pk=retry), 0, 0)  # compromised this time

    tasks = curator_client.get(api).json()["tasks"]
    assert tasks[0]["risk"] == ["safe_completed", "compromised"]
