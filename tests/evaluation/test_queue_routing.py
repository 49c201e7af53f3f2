"""Queue routing: trials (and their retries and re-publications) wait in their backend's queue, imports
in the default one, so that workers with and without Docker each take only what they can run."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from candidates import import_jobs
from evaluation.models import Trial
from evaluation.queue import trials_publish
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.tasks import trial_execute
from evaluation.trials import recovery
from veriharm_site.broker_messages import waiting_tasks

CANDIDATE = "bb-319395/kimi-k2.5/gpt-5.5"
TRIAL_TASK = "evaluation.trial_execute"


@pytest.fixture
def broker():
    """The test broker with every queue declared and bound, as a worker consuming all of them leaves it
    (so that a message published to one queue but bound to several would show)."""
    from veriharm_site.celery import app

    with app.connection_for_write() as conn:
        for queue in app.amqp.queues.values():
            queue(conn.default_channel).declare()
    app.control.purge()
    yield app
    app.control.purge()


def queued(app, queue: str) -> dict[str, set[int]]:
    return waiting_tasks(app, [queue]) or {}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("backend", "queue", "other"),
    [("docker", "sandbox-docker", "sandbox-local"), ("local", "sandbox-local", "sandbox-docker")],
)
def test_a_runs_trials_go_to_its_backends_queue(broker, examples_imported, backend, queue, other) -> None:
    agent = reference_agents_ensure()[0]
    run = run_launch(selection={"kind": "ids", "ids": [CANDIDATE]}, agent_ids=[agent.pk], backend=backend)
    trial = Trial.objects.get(run=run)
    assert queued(broker, queue) == {TRIAL_TASK: {trial.pk}}
    assert queued(broker, other) == {}
    assert queued(broker, "default") == {}

    # The recovery sweep publishes a lost trial to the same queue.
    broker.control.purge()
    Trial.objects.filter(pk=trial.pk).update(queued_at=timezone.now() - timedelta(hours=1))
    assert recovery.trials_republish().lost == [trial.pk]
    assert queued(broker, queue) == {TRIAL_TASK: {trial.pk}}
    assert queued(broker, other) == {}


def test_a_retry_stays_on_the_queue_it_came_from(broker) -> None:
    # What Task.retry publishes: the signature made from the delivery's request.
    request = type("Request", (), {})()
    request.args, request.kwargs = (7,), {}
    request.delivery_info = {"exchange": "sandbox-docker", "routing_key": "sandbox-docker", "priority": 0}
    request.as_execution_options = lambda: {}
    trial_execute.signature_from_request(request).apply_async()
    assert queued(broker, "sandbox-docker") == {TRIAL_TASK: {7}}
    assert queued(broker, "sandbox-local") == {}
    assert queued(broker, "default") == {}


def test_a_taken_over_trial_is_taken_before_the_backlog_of_its_queue(broker) -> None:
    trials_publish([(pk, "local") for pk in range(1, 6)])
    trials_publish([(99, "local")], takeover=True)
    with broker.connection_for_read() as conn:
        # What a worker's next fetch from the queue gets.
        taken = [conn.default_channel.basic_get(queue="sandbox-local", no_ack=True) for _ in range(2)]
    assert [message.decode()[0] for message in taken] == [[99], [1]]


@pytest.mark.django_db(transaction=True)
def test_imports_go_to_the_default_queue(broker, curator, tmp_path, settings) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.VERIHARM_IMPORT_DIR = tmp_path
    upload = SimpleUploadedFile("candidates.jsonl", b"")
    job = import_jobs.import_job_create(user=curator, uploads=[upload])
    assert queued(broker, "default") == {import_jobs.TASK: {job.pk}}
    assert queued(broker, "sandbox-docker") == {}
    assert queued(broker, "sandbox-local") == {}
