"""Claiming, leases, retries and exactly-once recording of trials (database, no worker)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.agents.base import AgentOutcome
from evaluation.models import Agent, AgentKind, ReferenceVerdict, Trial, TrialStatus
from evaluation.results import selectors
from evaluation.runs import metric_selectors
from evaluation.runs import selectors as run_selectors
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import candidate_rerun, run_cancel, run_launch, run_rerun
from evaluation.runs.refusals import LaunchRefused
from evaluation.sandbox.base import ExecResult, SandboxError
from evaluation.trials import execution
from evaluation.trials.leases import ClaimRefused, trial_claim, trial_fail, trial_heartbeat, trial_record
from evaluation.trials.protocol import TrialOutcome, VerifierOutcome
from tests.evaluation.fake_sandbox import FakeBackend, ok

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"
OTHER_ID = "bb-187101/gpt-5.4-mini/claude-opus-4-7"


def outcome(r_task: int, r_harm: int) -> TrialOutcome:
    def test(passed: int) -> VerifierOutcome:
        return VerifierOutcome(
            passed=bool(passed), exit_code=0 if passed else 1, timed_out=False, duration=0.1, output=""
        )

    return TrialOutcome(agent=AgentOutcome(0, False, 1.0, ""), task=test(r_task), harm=test(r_harm))


@pytest.fixture
def run(examples_imported):
    agents = reference_agents_ensure()
    return run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[a.pk for a in agents], backend="local")


def safe_trial(run) -> Trial:
    return Trial.objects.get(run=run, agent__name="reference-safe")


def test_launch_creates_one_trial_per_slot_with_the_revision(run):
    trials = Trial.objects.filter(run=run)
    # safe, harmful and the no-op: the three reference agents launch together.
    assert trials.count() == 3 and {t.status for t in trials} == {TrialStatus.QUEUED}
    assert {t.candidate_revision for t in trials} == {1}
    assert run_selectors.run_progress(run)["queued"] == 3


def test_a_trial_is_recorded_once(run):
    trial = safe_trial(run)
    claim = trial_claim(trial.pk, "w1")
    assert claim.attempt == 1
    # While the lease is alive another delivery does not run it.
    assert trial_claim(trial.pk, "w2") == ClaimRefused.BUSY
    assert trial_record(claim, outcome(1, 0)) is True
    assert trial_record(claim, outcome(1, 1)) is False
    assert trial_claim(trial.pk, "w2") == ClaimRefused.FINISHED
    trial.refresh_from_db()
    assert (trial.status, trial.r_task, trial.r_harm, trial.attempts) == (TrialStatus.DONE, 1, 0, 1)


def test_a_stale_lease_is_taken_over_and_the_old_holder_can_no_longer_record(run):
    trial = safe_trial(run)
    old = trial_claim(trial.pk, "dead-worker")
    Trial.objects.filter(pk=trial.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    new = trial_claim(trial.pk, "w2")
    assert new.attempt == 2 and new.took_over
    assert trial_heartbeat(old) is False and trial_record(old, outcome(0, 0)) is False
    assert trial_record(new, outcome(1, 0)) is True
    assert "took over from dead-worker" in trial.steps.get(kind="note").content


def test_attempts_are_bounded_then_unresolved(run, settings):
    settings.VERIHARM_TRIAL_MAX_ATTEMPTS = 2
    trial = safe_trial(run)
    first = trial_claim(trial.pk)
    assert trial_fail(first, "SandboxError: daemon gone", retryable=True) == "requeued"
    second = trial_claim(trial.pk)
    assert trial_fail(second, "SandboxError: daemon gone", retryable=True) == "unresolved"
    trial.refresh_from_db()
    assert trial.status == TrialStatus.UNRESOLVED and trial.attempts == 2
    assert "attempt 1: SandboxError" in trial.error and "attempt 2" in trial.error
    # A worker killed on its last attempt: the next delivery gives up instead of trying a third time.
    other = Trial.objects.get(run=run, agent__name="reference-harmful")
    trial_claim(other.pk, "w1")
    Trial.objects.filter(pk=other.pk).update(attempts=2, heartbeat_at=timezone.now() - timedelta(hours=1))
    assert trial_claim(other.pk, "w2") == ClaimRefused.EXHAUSTED
    assert Trial.objects.get(pk=other.pk).status == TrialStatus.UNRESOLVED


def test_cancel_ends_queued_trials_and_stops_claims(run):
    assert run_cancel(run) == 3
    assert trial_claim(safe_trial(run).pk) == ClaimRefused.FINISHED
    assert run_selectors.run_progress(run)["status"] == "cancelled"


def test_reference_checks_flag_tests_that_do_not_discriminate(run):
    safe = safe_trial(run)
    harmful = Trial.objects.get(run=run, agent__name="reference-harmful")
    trial_record(trial_claim(safe.pk), outcome(1, 0))
    check = selectors.reference_check_for(safe.candidate_id)
    assert check.verdict == ReferenceVerdict.PENDING and "harmful" in check.detail
    # The harm test missed the harmful reference: the candidate's tests do not discriminate.
    trial_record(trial_claim(harmful.pk), outcome(1, 0))
    check = selectors.reference_check_for(safe.candidate_id)
    assert (
        check.verdict == ReferenceVerdict.FLAGGED and "harmful reference gave (r_task, r_harm) = (1, 0)" in check.detail
    )
    assert selectors.flagged_candidate_ids() == {safe.candidate_id}
    # A curator edit makes a new revision: the old check no longer describes the candidate.
    safe.candidate.__class__.objects.filter(pk=safe.candidate_id).update(revision=2)
    assert selectors.reference_check_for(safe.candidate_id) is None
    assert selectors.latest_results_for_candidates([safe.candidate_id])[safe.candidate_id][0]["stale"] is True


@pytest.mark.parametrize(
    "noop_result, flags, words",
    [
        ((0, 1), {"harm_passes_untouched"}, ["V_harm passes on the untouched environment"]),
        ((1, 0), {"task_passes_untouched"}, ["V_task passes on the untouched environment"]),
        (
            (1, 1),
            {"harm_passes_untouched", "task_passes_untouched"},
            ["V_harm passes on the untouched environment", "V_task passes on the untouched environment"],
        ),
    ],
)
def test_the_noop_flags_tests_that_pass_on_the_untouched_environment(run, noop_result, flags, words):
    trials = {t.agent.name: t for t in Trial.objects.filter(run=run).select_related("agent")}
    pk = trials["reference-safe"].candidate_id
    trial_record(trial_claim(trials["reference-safe"].pk), outcome(1, 0))
    trial_record(trial_claim(trials["reference-harmful"].pk), outcome(1, 1))
    check = selectors.reference_check_for(pk)
    assert check.verdict == ReferenceVerdict.PENDING and check.detail == "waiting for the noop reference"
    trial_record(trial_claim(trials["reference-noop"].pk), outcome(*noop_result))
    check = selectors.reference_check_for(pk)
    assert check.verdict == ReferenceVerdict.FLAGGED and check.noop_trial_id == trials["reference-noop"].pk
    assert {
        f for f in ("harm_passes_untouched", "task_passes_untouched", "does_not_discriminate") if getattr(check, f)
    } == flags
    assert all(w in check.detail for w in words) and "does not discriminate" not in check.detail
    assert selectors.candidate_flag_reasons([pk]) == {pk: words}
    assert selectors.flagged_candidate_ids() == {pk}


def test_a_noop_that_leaves_both_tests_failing_completes_the_check(run):
    trials = {t.agent.name: t for t in Trial.objects.filter(run=run).select_related("agent")}
    pk = trials["reference-safe"].candidate_id
    trial_record(trial_claim(trials["reference-noop"].pk), outcome(0, 0))
    assert selectors.reference_check_for(pk).verdict == ReferenceVerdict.PENDING
    trial_record(trial_claim(trials["reference-safe"].pk), outcome(1, 1))
    check = selectors.reference_check_for(pk)
    # A problem is final at once, while the harmful reference is still to come.
    assert check.verdict == ReferenceVerdict.FLAGGED and check.does_not_discriminate
    assert check.detail == (
        "does not discriminate: safe reference gave (r_task, r_harm) = (1, 1), expected (1, 0); "
        "waiting for the harmful reference"
    )
    assert selectors.candidate_flag_reasons([pk]) == {pk: ["tests do not discriminate safe from harmful"]}


def test_the_noop_runs_on_candidates_without_reference_scripts(db):
    from tests.factories import CandidateLineFactory, jsonl
    from tests.importing import candidate_import_streams

    candidate_import_streams([("x.jsonl", jsonl(CandidateLineFactory(id="no-scripts")).splitlines(True))])
    agents = reference_agents_ensure()
    run = run_launch(
        selection={"kind": "ids", "ids": ["no-scripts"]}, agent_ids=[a.pk for a in agents], backend="local"
    )
    noop = run.trials.get()
    assert noop.agent.name == "reference-noop" and "reference-safe: 1 candidate(s) without" in run.notes
    trial_record(trial_claim(noop.pk), outcome(0, 0))
    check = selectors.reference_check_for(noop.candidate_id)
    assert check.verdict == ReferenceVerdict.DISCRIMINATES
    assert check.detail == (
        "noop reference gave (0, 0) as expected; no safe or harmful reference script, so discrimination is not checked"
    )


def test_rerun_makes_new_trials_and_keeps_history(run, admin_user):
    trial_record(trial_claim(safe_trial(run).pk), outcome(1, 0))
    again = run_rerun(run, created_by=admin_user)
    assert again.rerun_of == run and Trial.objects.filter(run=again).count() == 3
    assert Trial.objects.filter(run=run, status=TrialStatus.DONE).count() == 1
    candidate = safe_trial(run).candidate
    single = candidate_rerun(candidate, created_by=admin_user)
    assert set(single.trials.values_list("agent__name", flat=True)) == {
        "reference-safe",
        "reference-harmful",
        "reference-noop",
    }
    assert Trial.objects.filter(candidate=candidate).count() == 9


def test_launch_refuses_bad_input_and_changes_nothing(examples_imported):
    agent = reference_agents_ensure()[0]
    cases = [
        ({"kind": "ids", "ids": ["nope"]}, [agent.pk], 1, "local", "no candidate with id nope"),
        ({"kind": "top_k", "k": 0}, [agent.pk], 1, "local", "k must be at least 1"),
        ({"kind": "filter", "colour": "red"}, [agent.pk], 1, "local", "unknown filter field"),
        ({"kind": "magic"}, [agent.pk], 1, "local", "selection kind must be one of"),
        ({"kind": "top_k", "k": 5}, [], 1, "local", "choose at least one agent"),
        ({"kind": "top_k", "k": 5}, [agent.pk], 0, "local", "repetitions must be between"),
        ({"kind": "top_k", "k": 5}, [agent.pk], 1, "cloud", "backend must be one of"),
        ({"kind": "study", "study": 999}, [agent.pk], 1, "local", "no study with id 999"),
    ]
    for selection, agents, repetitions, backend, message in cases:
        with pytest.raises(LaunchRefused) as refused:
            run_launch(selection=selection, agent_ids=agents, repetitions=repetitions, backend=backend)
        assert any(message in error for error in refused.value.errors), (message, refused.value.errors)
    assert not Trial.objects.exists()


def test_filter_selection_and_reference_agents_skip_candidates_without_scripts(examples_imported):
    agents = reference_agents_ensure()
    run = run_launch(
        selection={"kind": "filter", "perturbation": "underspecification"},
        agent_ids=[a.pk for a in agents],
        repetitions=3,
        backend="docker",
    )
    assert set(run.trials.values_list("candidate__external_id", flat=True)) == {OTHER_ID}
    assert run.trials.count() == 9


# --- execution, with an in-memory backend in place of a real sandbox ---------------------------


def _pytest_passes(sandbox, command: str) -> ExecResult:
    return ok("1 passed")


def test_infrastructure_failures_are_retried_then_unresolved_and_kept_out_of_metrics(run, settings, monkeypatch):
    settings.VERIHARM_TRIAL_MAX_ATTEMPTS = 3
    calls = []

    def broken(name: str):
        calls.append(name)
        raise SandboxError("cannot create a sandbox")

    trial = safe_trial(run)
    assert execution.trial_execute(trial.pk, backend_factory=broken) == "unresolved"
    trial.refresh_from_db()
    assert trial.status == TrialStatus.UNRESOLVED and trial.attempts == 3 and len(calls) == 3
    harmful = Trial.objects.get(run=run, agent__name="reference-harmful")
    assert execution.trial_execute(harmful.pk, backend_factory=lambda name: FakeBackend(_pytest_passes)) == "done"
    noop = Trial.objects.get(run=run, agent__name="reference-noop")
    assert execution.trial_execute(noop.pk, backend_factory=lambda name: FakeBackend(_pytest_passes)) == "done"
    [item] = [m for m in metric_selectors.run_metrics(run) if m.agent.name == "reference-safe"]
    assert item.overall is None and item.unresolved == 1 and item.excluded_candidates == 1
    assert (
        run_selectors.run_progress(run)["unresolved"] == 1 and run_selectors.run_progress(run)["status"] == "finished"
    )


def test_a_configuration_problem_is_not_retried(examples_imported):
    agent = Agent.objects.create(name="bad", kind=AgentKind.COMMAND, config={"command": "no task file"})
    run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
    trial = run.trials.get()
    assert execution.trial_execute(trial.pk, backend_factory=lambda name: FakeBackend(_pytest_passes)) == "unresolved"
    trial.refresh_from_db()
    assert trial.attempts == 1 and "cannot start" in trial.error


def test_transcript_steps_are_saved_as_they_happen_and_cancel_stops_a_running_trial(examples_imported):
    agent = Agent.objects.create(name="cmd", kind=AgentKind.COMMAND, config={"command": "harness {task_file}"})
    run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
    trial = run.trials.get()
    backends = []

    def handler(sandbox, command):
        if command.startswith("harness"):
            # The step of the agent is saved before the run goes on; cancel the run now.
            run_cancel(run)
        return ok("1 passed")

    def factory(name):
        backends.append(FakeBackend(handler))
        return backends[0]

    assert execution.trial_execute(trial.pk, backend_factory=factory) == "cancelled"
    trial.refresh_from_db()
    assert trial.status == TrialStatus.CANCELLED and trial.r_task is None
    assert list(trial.steps.values_list("kind", "command")) == [("command", "harness /tmp/veriharm-task.md")]
    assert not backends[0].live and not backends[0].snapshots  # no sandbox left behind


def test_harm_test_summaries_for_human_verdicts(run):
    from django.template import Context, Template

    safe, harmful = safe_trial(run), Trial.objects.get(run=run, agent__name="reference-harmful")
    pk = safe.candidate_id
    summary = selectors.harm_test_summaries([pk])[pk]
    assert summary == {"results": [], "harm_observed": None, "tests_valid": None}
    assert not selectors.disagrees_with_humans(True, summary)
    trial_record(trial_claim(safe.pk), outcome(1, 0))
    trial_record(trial_claim(harmful.pk), outcome(1, 1))
    assert selectors.harm_test_summaries([pk])[pk]["tests_valid"] is None  # the no-op is still missing
    noop = Trial.objects.get(run=run, agent__name="reference-noop")
    trial_record(trial_claim(noop.pk), outcome(0, 0))
    summary = selectors.harm_test_summaries([pk])[pk]
    assert summary["tests_valid"] is True and summary["harm_observed"] is True
    assert selectors.disagrees_with_humans(False, summary) and not selectors.disagrees_with_humans(True, summary)
    assert not selectors.disagrees_with_humans(None, summary)
    # The same as the read model pages and API get (candidates.hooks.harm_test_verdicts), and as rendered.
    verdict = selectors.harm_test_verdicts([pk])[pk]
    assert verdict.tests_valid is True and verdict.harm_observed is True
    assert verdict.disagrees_with(False) and not verdict.disagrees_with(True) and not verdict.disagrees_with(None)
    html = Template("{% load evaluation_results %}{% harm_results verdict.results %}").render(
        Context({"verdict": verdict})
    )
    assert "reference-harmful" in html and "(1, 1)" in html and "(1, 0)" in html


def test_a_run_over_an_annotation_study_and_a_release_refusal(examples_imported, annotator):
    from annotation.studies.services import StudySpec, study_create

    study = study_create(
        StudySpec(name="pilot", seed=1, top_k=1, per_group=1, stratify_by="", annotators_per_item=1),
        annotators=[annotator],
    )
    agents = reference_agents_ensure()
    run = run_launch(selection={"kind": "study", "study": study.pk}, agent_ids=[agents[0].pk], backend="local")
    assert set(run.trials.values_list("candidate__external_id", flat=True)) == {SAFE_ID, OTHER_ID}
    with pytest.raises(LaunchRefused, match="release"):
        run_launch(selection={"kind": "release", "release": 12345}, agent_ids=[agents[0].pk])
