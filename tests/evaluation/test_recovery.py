"""The recovery sweep publishes again exactly the trials that need a message, and says when the
broker could deliver a running task twice."""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from evaluation import recovery, runs
from evaluation.models import Trial, TrialStatus
from veriharm_site.broker_messages import waiting_tasks
from veriharm_site.recovery import broker_settings_problems

CANDIDATE = "bb-319395/kimi-k2.5/gpt-5.5"
TASK = "evaluation.trial_execute"


@pytest.fixture
def broker():
    from veriharm_site.celery import app

    app.control.purge()
    yield app
    app.control.purge()


def _launch() -> Trial:
    agent = runs.reference_agents_ensure()[0]
    run = runs.run_launch(selection={"kind": "ids", "ids": [CANDIDATE]}, agent_ids=[agent.pk], backend="local")
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
    claim = runs.trial_claim(trial.pk, "w1@host")
    assert recovery.trials_republish().expired == []  # a live heartbeat
    Trial.objects.filter(pk=trial.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=31))
    assert recovery.trials_republish().expired == [trial.pk]
    assert waiting_tasks(broker)[TASK] == {trial.pk}
    # The new delivery takes over: a second attempt, and the dead worker's claim can record nothing.
    taken = runs.trial_claim(trial.pk, "w2@host")
    assert taken.attempt == 2 and taken.took_over
    assert not runs.trial_heartbeat(claim)


def test_the_broker_is_read_from_redis_messages_without_consuming_them(broker):
    from evaluation.tasks import trial_execute

    trial_execute.apply_async((424242,))
    trial_execute.apply_async((424243,), priority=6)
    assert waiting_tasks(broker)[TASK] == {424242, 424243}
    assert waiting_tasks(broker)[TASK] == {424242, 424243}


def test_the_filesystem_broker_is_read_too(tmp_path, monkeypatch):
    from celery import Celery

    # Celery prefers CELERY_BROKER_URL from the environment to the broker it is given.
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    folder = tmp_path / "queue"
    folder.mkdir()
    app = Celery("fs", broker="filesystem://", set_as_current=False)
    app.conf.broker_transport_options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(tmp_path / "control"),
    }
    app.send_task(TASK, args=(7,))
    assert waiting_tasks(app) == {TASK: {7}}
    assert json.loads(next(folder.glob("*.msg")).read_bytes())["headers"]["task"] == TASK


def _settings(**values) -> SimpleNamespace:
    shipped = {
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        "CELERY_TASK_TIME_LIMIT": 3600,
        "CELERY_TASK_SOFT_TIME_LIMIT": 3300,
        "CELERY_BROKER_TRANSPORT_OPTIONS": {"visibility_timeout": 7200},
        "VERIHARM_TRIAL_LEASE_SECONDS": 120,
        "VERIHARM_TRIAL_HEARTBEAT_SECONDS": 10,
    }
    return SimpleNamespace(**{**shipped, **values})


def test_a_visibility_timeout_not_above_the_hard_limit_is_refused():
    assert broker_settings_problems(_settings()) == []
    assert (
        "visibility_timeout (3600s) must exceed"
        in broker_settings_problems(_settings(CELERY_BROKER_TRANSPORT_OPTIONS={"visibility_timeout": 3600}))[0]
    )
    # kombu's default of one hour applies when none is set.
    assert broker_settings_problems(_settings(CELERY_BROKER_TRANSPORT_OPTIONS={}))
    assert broker_settings_problems(_settings(VERIHARM_TRIAL_HEARTBEAT_SECONDS=60))
