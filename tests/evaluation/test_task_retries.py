"""A trial whose task meets a transient database error is tried again by the worker, not stranded."""
import pytest
from django.db import OperationalError

from evaluation import execution, services
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
    agent = services.reference_agents_ensure()[0]
    run = services.run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
    trial = run.trials.get()
    wait_until(lambda: len(calls) >= 2, 30, "the task to be tried again")
    assert calls == [trial.pk, trial.pk]
