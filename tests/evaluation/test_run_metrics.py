"""A run's metrics as its page shows them: counted by the database, equal to the metrics of its
done risk trials, with unresolved, stale and never-scored trials counted beside them."""

from __future__ import annotations

import random

import pytest

from candidates.models import Candidate
from evaluation.models import Trial, TrialKind, TrialStatus
from evaluation.runs import metric_selectors
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.metrics import Observation, breakdown, compute
from tests.candidates.curation_support import import_lines
from tests.factories import CandidateLineFactory, RunFactory, TrialFactory

pytestmark = pytest.mark.django_db


def _trial(run, candidate, agent, repetition, status, r_task=None, r_harm=None, kind=TrialKind.RISK) -> Trial:
    fields = {"r_task": r_task, "r_harm": r_harm} if status == TrialStatus.DONE else {}
    return TrialFactory.build(
        run=run, candidate=candidate, agent=agent, kind=kind, repetition=repetition, status=status, **fields
    )


def test_run_metrics_are_the_metrics_of_its_done_risk_trials():
    import_lines(*[CandidateLineFactory(id=f"metric-{i}") for i in range(6)])
    candidates = list(Candidate.objects.order_by("external_id"))
    agents = reference_agents_ensure()[:2]
    run = RunFactory(name="metrics", repetitions=3, agents=agents)
    rng = random.Random(3)
    trials, observations = [], {agent.pk: [] for agent in agents}
    for agent in agents:
        for candidate in candidates[:5]:
            for repetition in (1, 2, 3):
                r_task, r_harm = rng.randrange(2), rng.randrange(2)
                trials.append(_trial(run, candidate, agent, repetition, TrialStatus.DONE, r_task, r_harm))
                observations[agent.pk].append(
                    Observation(candidate.pk, r_task, r_harm, candidate.perturbation, candidate.risk_category)
                )
        # The sixth candidate never got a verdict: one unresolved and one still queued trial.
        trials.append(_trial(run, candidates[5], agent, 1, TrialStatus.UNRESOLVED))
        trials.append(_trial(run, candidates[5], agent, 2, TrialStatus.QUEUED))
        # A capability twin has no harm test: not part of the metrics, nor of the counts beside them.
        trials.append(_trial(run, candidates[5], agent, 1, TrialStatus.QUEUED, kind=TrialKind.TWIN))
    Trial.objects.bulk_create(trials)
    # An edit after the run makes that candidate's trials stale (still scored, and counted as stale).
    Candidate.objects.filter(pk=candidates[0].pk).update(revision=2)

    by_agent = {item.agent.pk: item for item in metric_selectors.run_metrics(run)}
    assert [item.agent.name for item in metric_selectors.run_metrics(run)] == sorted(a.name for a in agents)
    for agent in agents:
        item, expected = by_agent[agent.pk], observations[agent.pk]
        assert item.overall == compute(expected)
        assert item.overall.n_candidates == 5 and item.overall.n_trials == 15
        assert item.by_perturbation == breakdown(expected, lambda o: o.perturbation)
        assert item.by_risk_category == breakdown(expected, lambda o: o.risk_category)
        assert (item.unresolved, item.stale, item.excluded_candidates) == (1, 3, 1)


def test_a_run_without_verdicts_has_no_metrics():
    import_lines(CandidateLineFactory(id="metric-none"))
    candidate = Candidate.objects.get()
    [agent] = reference_agents_ensure()[:1]
    run = RunFactory(name="nothing yet", agents=[agent])
    Trial.objects.bulk_create([_trial(run, candidate, agent, 1, TrialStatus.QUEUED)])
    [item] = metric_selectors.run_metrics(run)
    assert item.overall is None and item.by_perturbation == {} and item.excluded_candidates == 1


def test_a_runs_trials_page_in_order_with_each_ones_model_usage(admin_client_):
    from evaluation.models import ModelCall

    import_lines(*[CandidateLineFactory(id=f"paged-{i:02d}") for i in range(13)])
    candidates = list(Candidate.objects.order_by("rank", "external_id"))
    agents = sorted(reference_agents_ensure()[:2], key=lambda a: a.name)
    run = RunFactory(name="paged", repetitions=2, agents=agents)
    Trial.objects.bulk_create(
        [
            _trial(run, candidate, agent, repetition, TrialStatus.DONE, 1, repetition - 1)
            for candidate in reversed(candidates)
            for agent in agents
            for repetition in (2, 1)
        ]
    )
    used = Trial.objects.get(run=run, candidate=candidates[0], agent=agents[1], repetition=2)
    for tokens in (100, 20):
        ModelCall.objects.create(
            trial=used, attempt=1, route="chat_completions", status_code=200, input_tokens=tokens, latency=0.1
        )

    first = admin_client_.get(f"/api/evaluation/runs/{run.pk}/trials/").json()
    second = admin_client_.get(f"/api/evaluation/runs/{run.pk}/trials/?page=2").json()
    assert first["count"] == 52 and len(first["results"]) == 50 and len(second["results"]) == 2
    expected = [
        (candidate.external_id, agent.name, repetition)
        for candidate in candidates
        for agent in agents
        for repetition in (1, 2)
    ]
    rows = first["results"] + second["results"]
    by_id = {t.pk: t for t in Trial.objects.filter(run=run).select_related("candidate", "agent")}
    walked = [
        (by_id[r["id"]].candidate.external_id, by_id[r["id"]].agent.name, by_id[r["id"]].repetition) for r in rows
    ]
    assert walked == expected
    usage = {r["id"]: r["model_usage"] for r in rows}
    assert usage[used.pk]["calls"] == 2 and usage[used.pk]["input_tokens"] == 120
    assert sum(u["calls"] for u in usage.values()) == 2
    page = admin_client_.get(f"/evaluation/runs/{run.pk}/?page=2")
    assert page.status_code == 200 and candidates[-1].external_id in page.content.decode()


def test_metrics_pages_show_intervals_where_the_standard_error_says_nothing(curator_client):
    import_lines(*[CandidateLineFactory(id=f"all-pass-{i}") for i in range(11)])
    agent = reference_agents_ensure()[0]
    run = RunFactory(name="all pass", agents=[agent])
    Trial.objects.bulk_create(
        _trial(run, candidate, agent, 1, TrialStatus.DONE, 1, 0) for candidate in Candidate.objects.all()
    )
    for url in (f"/evaluation/runs/{run.pk}/", f"/evaluation/runs/{run.pk}/metrics/"):
        page = curator_client.get(url).content.decode()
        # 11 of 11 with the task done, 0 of 11 harmful: intervals a hand computation gives, no "± 0.0".
        assert 'title="95% Wilson interval, each candidate counted once">74.1–100.0%</div>' in page
        assert 'title="95% Wilson interval, each candidate counted once">0.0–25.9%</div>' in page
        assert "± 0.0" not in page and 'title="one standard error, clustered by candidate">SE 0.0' in page
    row = next(r for r in curator_client.get(f"/api/evaluation/runs/{run.pk}/metrics/").json()["rows"])
    assert row["ta"] == 1.0 and row["ta_se"] == 0.0
    assert row["ta_ci_low"] == pytest.approx(0.741167033032) and row["ta_ci_high"] == 1.0
    assert (row["hsr_ci_low"], row["hsr_ci_high"]) == (0.0, pytest.approx(0.258832966968))
    csv_page = curator_client.get(f"/evaluation/runs/{run.pk}/metrics/?format=csv").content.decode()
    assert "ta_ci_low,ta_ci_high" in csv_page.splitlines()[0]
