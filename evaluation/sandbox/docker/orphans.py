"""Which containers and snapshot files this process owns, and the sweep that removes what a dead
owner left behind.

Containers are labelled ``veriharm.sandbox=1`` plus the owning pid, its start time and the host
name; snapshot files are named after the owning pid and its start time. ``cleanup_orphans``
removes those whose owner is gone, and this process's own that no live object holds any more.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import docker
import docker.errors
from docker.models.containers import Container

from ..environment import SANDBOX_LABEL, SandboxError

LIVE: set[str] = set()  # container ids owned by live sandbox objects of this process
# Tokens of containers this process is creating: between the engine's answer and the sandbox
# object taking the id (or, for a helper, its whole short use) they are this process's own but
# not yet live, and a sweep in another thread must leave them alone.
CREATING: set[str] = set()
CREATION_LABEL = "veriharm.creation"
LIVE_LOCK = threading.Lock()


def _process_start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _owner_labels(kind: str) -> dict[str, str]:
    pid = os.getpid()
    return {
        SANDBOX_LABEL: "1",
        "veriharm.kind": kind,
        "veriharm.owner_pid": str(pid),
        "veriharm.owner_start": str(_process_start_time(pid)),
        "veriharm.host": socket.gethostname(),
    }


@contextlib.contextmanager
def creating(kind: str) -> Iterator[dict[str, str]]:
    """The owner labels for a container about to be created, marked as being created until the
    block ends: ``cleanup_orphans`` leaves it alone until then."""
    token = secrets.token_hex(8)
    with LIVE_LOCK:
        CREATING.add(token)
    try:
        yield {**_owner_labels(kind), CREATION_LABEL: token}
    finally:
        with LIVE_LOCK:
            CREATING.discard(token)


def _owner_gone(labels: Mapping[str, str]) -> bool:
    try:
        pid = int(labels.get("veriharm.owner_pid", ""))
    except ValueError:
        return True
    return str(_process_start_time(pid)) != labels.get("veriharm.owner_start")


def container_id_of(container: Container) -> str:
    assert container.id is not None  # a created container has one (types-docker allow None for any model)
    return container.id


def remove_container(client: docker.DockerClient, container_id: str) -> None:
    try:
        client.api.remove_container(container_id, force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        # "removal already in progress" is fine; anything else is a real failure.
        if "already in progress" not in str(exc):
            raise SandboxError(f"cannot remove container {container_id[:12]}: {exc}") from exc
    finally:
        with LIVE_LOCK:
            LIVE.discard(container_id)


def remove_file(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def snapshot_file(state_dir: Path) -> Path:
    """A new snapshot file's path, named after its owner (``_remove_orphan_snapshots`` reads it)."""
    pid = os.getpid()
    return state_dir / f"snap-{pid}-{_process_start_time(pid)}-{secrets.token_hex(6)}.tar"


def cleanup_orphans(client: docker.DockerClient, state_dir: Path) -> int:
    """Remove the containers and snapshot files whose owner is gone; returns how many sandboxes."""
    here = socket.gethostname()
    try:
        # The list alone (ids and labels): the SDK's containers.list() then inspects each
        # container, and one removed meanwhile by any other process would fail the sweep.
        containers = client.api.containers(all=True, filters={"label": f"{SANDBOX_LABEL}=1"})
    except docker.errors.DockerException as exc:
        raise SandboxError(f"cannot list containers: {exc}") from exc
    removed = 0
    for container in containers:
        container_id, labels = container["Id"], container.get("Labels") or {}
        if labels.get("veriharm.host") != here:
            continue  # another machine's, sharing this engine: not ours to judge
        mine = labels.get("veriharm.owner_pid") == str(os.getpid())
        with LIVE_LOCK:
            live = container_id in LIVE or labels.get(CREATION_LABEL) in CREATING
        if (mine and not live) or (not mine and _owner_gone(labels)):
            remove_container(client, container_id)
            if labels.get("veriharm.kind") == "sandbox":
                removed += 1
    _remove_orphan_snapshots(state_dir)
    return removed


def _remove_orphan_snapshots(state_dir: Path) -> None:
    if not state_dir.is_dir():
        return
    for path in state_dir.glob("snap-*.tar"):
        try:
            _, pid, start, _rest = path.name.split("-", 3)
        except ValueError:
            continue
        if str(_process_start_time(int(pid))) != start:
            remove_file(path)
