"""A trial whose task meets a transient database error is tried again by the worker, not stranded."""

import pytest
from django.db import OperationalError

from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.trials import execution
from evaluation.trials.leases import trial_claim, trial_fail, trial_heartbeat
from tests.evaluation.conftest import wait_until

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"


@pytest.mark.django_db(transaction=True)
def test_a_locked_database_is_waited_out(examples_imported, celery_worker_thread, monkeypatch):
    calls = []

    def locked_once(trial_id: int, **kwargs):
        calls.append(trial_id)
        if len(calls) == 1:
            raise OperationalError("database is locked")
        return "done"

    monkeypatch.setattr(execution, "trial_execute", locked_once)
    agent = reference_agents_ensure()[0]
    run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
    trial = run.trials.get()
    wait_until(lambda: len(calls) >= 2, 30, "the task to be tried again")
    assert calls == [trial.pk, trial.pk]


@pytest.mark.django_db(transaction=True)
def test_an_attempt_cut_off_from_the_database_is_taken_back_at_once(
    examples_imported, celery_worker_thread, monkeypatch
):
    """Found by benchmarks/soak.py: after a PostgreSQL restart, the retry of a trial that was running
    found the trial's lease still fresh (its attempt had died without releasing it) and waited the
    whole lease (two minutes, shipped) for a takeover, though its worker was alive and idle."""
    from django.conf import settings

    from evaluation.models import Trial, TrialStatus

    claims = []

    def attempt(claim, backend_factory):
        claims.append(claim)
        if len(claims) == 1:
            raise OperationalError("the connection is lost")  # PostgreSQL restarted mid-trial
        return trial_fail(claim, "ended here by the test", retryable=False)

    monkeypatch.setattr(execution, "_attempt", attempt)
    agent = reference_agents_ensure()[0]
    run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
    trial = run.trials.get()
    assert settings.VERIHARM_TRIAL_LEASE_SECONDS >= 60  # waiting the lease out would time out below
    wait_until(lambda: len(claims) >= 2, 20, "the trial to be taken back")
    first, second = claims
    assert (first.attempt, second.attempt) == (1, 2) and second.took_over and second.token != first.token
    wait_until(lambda: Trial.objects.get(pk=trial.pk).status == TrialStatus.UNRESOLVED, 10, "the second attempt")
    note = trial.steps.get(kind="note", attempt=2).content
    assert "lost its database connection" in note


@pytest.mark.django_db
def test_only_the_abandoned_token_takes_a_live_lease_back(examples_imported):
    from evaluation.trials.leases import ClaimRefused

    agent = reference_agents_ensure()[0]
    run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
    trial = run.trials.get()
    held = trial_claim(trial.pk, "w1")
    assert trial_claim(trial.pk, "w2") == ClaimRefused.BUSY
    assert trial_claim(trial.pk, "w2", abandoned="not-its-token") == ClaimRefused.BUSY
    taken = trial_claim(trial.pk, "w1", abandoned=held.token)
    assert taken.attempt == 2 and taken.took_over
    # The old attempt's writes are refused now, and its token takes nothing back a second time.
    assert not trial_heartbeat(held)
    assert trial_claim(trial.pk, "w2", abandoned=held.token) == ClaimRefused.BUSY
