"""The broker's waiting messages are read from the filesystem transport too, and settings under which
the broker could deliver a running task twice are refused."""

from __future__ import annotations

import json
from types import SimpleNamespace

from veriharm_site.broker_messages import waiting_tasks
from veriharm_site.recovery import broker_settings_problems

TASK = "evaluation.trial_execute"


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
