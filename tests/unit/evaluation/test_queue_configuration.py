"""Queue routing: each backend's trials have a queue of their own, with its own exchange and key, so
that workers with and without Docker each take only what they can run."""

from __future__ import annotations

from evaluation.queue import sandbox_queue


def test_the_queues_are_configured(settings) -> None:
    from veriharm_site.celery import app

    assert app.conf.task_default_queue == "default"
    # Each with its own exchange and key: no message is copied into another queue.
    assert {(q.name, q.exchange.name, q.routing_key) for q in app.amqp.queues.values()} == {
        ("default", "default", "default"),
        ("sandbox-local", "sandbox-local", "sandbox-local"),
        ("sandbox-docker", "sandbox-docker", "sandbox-docker"),
    }
    assert (sandbox_queue("docker"), sandbox_queue("local")) == ("sandbox-docker", "sandbox-local")
