"""A sweep for orphans (evaluation.trials.recovery, a trial after a dead worker) can run in one thread of a
worker while another (a warm pool's refill) is creating a container: the engine already lists that
container as this process's, but no sandbox object holds it yet. It must survive the sweep, and
become an orphan like any other if its creation is abandoned."""

from __future__ import annotations

import threading

import docker.errors

from evaluation.sandbox import Environment, SandboxBackend
from evaluation.sandbox.docker import DockerBackend
from evaluation.sandbox.docker.orphans import creating
from evaluation.sandbox.images import default_image


def _exists(backend: DockerBackend, container_id: str) -> bool:
    try:
        backend.client.containers.get(container_id)
        return True
    except docker.errors.NotFound:
        return False


def test_a_sweep_leaves_a_container_being_created_alone_and_removes_it_once_abandoned(
    backends: dict[str, SandboxBackend],
) -> None:
    backend = backends["docker"]
    assert isinstance(backend, DockerBackend)
    with creating("sandbox") as labels:
        container = backend.client.containers.create(
            default_image(), command=["true"], network_disabled=True, labels=labels
        )
        try:
            backend.cleanup_orphans()
            assert _exists(backend, container.id), "the sweep removed a container its process was still creating"
        except BaseException:
            container.remove(force=True)
            raise
    # Nothing took it over: from here on it is this process's orphan.
    backend.cleanup_orphans()
    assert not _exists(backend, container.id)


def test_a_sandbox_made_while_sweeps_run_is_whole(backends: dict[str, SandboxBackend]) -> None:
    """The end-to-end form: sweeps back to back in one thread while another builds and removes
    sandboxes, as a worker's recovery sweep runs beside its pool's refills."""
    backend = backends["docker"]
    stop = threading.Event()
    errors: list[BaseException] = []

    def sweep() -> None:
        while not stop.is_set():
            try:
                backend.cleanup_orphans()
            except Exception as exc:  # reported below
                errors.append(exc)
                return

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    try:
        for _ in range(3):
            with backend.create(Environment(workdir="/app")) as sandbox:
                assert sandbox.exec("echo alive", 30).stdout == "alive\n"
    finally:
        stop.set()
        sweeper.join()
    assert not errors
