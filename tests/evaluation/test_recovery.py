"""The recovery sweep publishes again exactly the trials that need a message, and says when the
broker could deliver a running task twice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.models import Trial, TrialStatus
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.trials import recovery
from evaluation.trials.leases import trial_claim, trial_heartbeat
from veriharm_site.broker_messages import waiting_tasks

CANDIDATE = "bb-319395/kimi-k2.5/gpt-5.5"
TASK = "evaluation.trial_execute"


@pytest.fixture
def broker():
    from veriharm_site.celery import app

    app.control.purge()
    yield app
    app.control.purge()


def _launch() -> Trial:
    agent = reference_agents_ensure()[0]
    run = run_launch(selection={"kind": "ids", "ids": [CANDIDATE]}, agent_ids=[agent.pk], backend="local")
    return Trial.objects.get(run=run)


@pytest.mark.django_db(transaction=True)
def test_a_queued_trial_is_published_again_only_when_its_message_is_gone(broker, examples_imported, settings):
    settings.VERIHARM_RECOVERY_QUEUED_SECONDS = 60
    trial = _launch()
    # Old enough to be suspicious, but its message still waits: nothing to do.
    Trial.objects.filter(pk=trial.pk).update(queued_at=timezone.now() - timedelta(minutes=5))
    assert recovery.trials_republish().lost == []
    assert waiting_tasks(broker)[TASK] == {trial.pk}

    broker.control.purge()
    report = recovery.trials_republish()
    assert report.lost == [trial.pk]
    assert waiting_tasks(broker)[TASK] == {trial.pk}
    # A second sweep (another worker's) finds the new message: no duplicate.
    assert recovery.trials_republish().lost == []
    with broker.connection_for_read() as conn:
        assert conn.default_channel.client.llen("sandbox-local") == 1


@pytest.mark.django_db(transaction=True)
def test_a_young_queued_trial_is_left_alone(broker, examples_imported, settings):
    settings.VERIHARM_RECOVERY_QUEUED_SECONDS = 60
    trial = _launch()
    broker.control.purge()
    assert recovery.trials_republish().lost == []  # its publish may still be on its way
    assert Trial.objects.get(pk=trial.pk).status == TrialStatus.QUEUED


@pytest.mark.django_db(transaction=True)
def test_only_a_running_trial_whose_lease_expired_is_published_again(broker, examples_imported, settings):
    settings.VERIHARM_TRIAL_LEASE_SECONDS = 30
    trial = _launch()
    broker.control.purge()
    claim = trial_claim(trial.pk, "w1@host")
    assert recovery.trials_republish().expired == []  # a live heartbeat
    Trial.objects.filter(pk=trial.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=31))
    assert recovery.trials_republish().expired == [trial.pk]
    assert waiting_tasks(broker)[TASK] == {trial.pk}
    # The new delivery takes over: a second attempt, and the dead worker's claim can record nothing.
    taken = trial_claim(trial.pk, "w2@host")
    assert taken.attempt == 2 and taken.took_over
    assert not trial_heartbeat(claim)


def test_the_broker_is_read_from_redis_messages_without_consuming_them(broker):
    from evaluation.tasks import trial_execute

    trial_execute.apply_async((424242,))
    trial_execute.apply_async((424243,), priority=6)
    assert waiting_tasks(broker)[TASK] == {424242, 424243}
    assert waiting_tasks(broker)[TASK] == {424242, 424243}
