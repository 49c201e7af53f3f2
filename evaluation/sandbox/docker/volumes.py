"""The verifier runtime's volume: the test phase mounts it read-only at ``VERIFIER_MOUNT``.

Filled from the runtime directory once per runtime identity, by a helper container that sees the
volume at ``VOLUME_FILL_MOUNT``.
"""

from __future__ import annotations

import contextlib
import fcntl
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
from docker.models.containers import Container

from ..environment import SANDBOX_LABEL, SandboxError, read_identity
from ..images import VERIFIER_IDENTITY, require_verifier_root
from .orphans import container_id_of, creating, remove_container
from .seeding import ChunkReader

# Where a helper container sees the verifier volume while it is filled.
VOLUME_FILL_MOUNT = "/veriharm-fill"


class VerifierVolume:
    """The volume of the verifier runtime, made by helper containers of ``image``."""

    def __init__(self, client: docker.DockerClient, image: str, state_dir: Path) -> None:
        self.client = client
        self.image = image
        self.state_dir = state_dir
        self._volume: str | None = None
        self._volume_lock = threading.Lock()

    def name(self) -> str:
        """The volume holding the verifier runtime, made from its directory when missing.

        Named after the runtime's identity, so a rebuilt runtime gets a new volume and a
        volume in use is never rewritten; its identity file is copied in last, so a
        half-filled volume (crash) is recognised and filled again.
        """
        with self._volume_lock:
            if self._volume is not None:
                return self._volume
            root = require_verifier_root()
            identity = read_identity(root / VERIFIER_IDENTITY, "verifier runtime")
            name = f"veriharm-verifier-{identity.removeprefix('sha256:')[:24]}"
            self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            with open(self.state_dir / ".verifier-volume.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    if self._volume_identity(name) != identity:
                        self._fill_volume(name, root)
                    if self._volume_identity(name) != identity:
                        raise SandboxError(f"volume {name} does not hold the verifier runtime {identity}")
                except docker.errors.DockerException as exc:
                    raise SandboxError(f"cannot prepare the verifier volume {name}: {exc}") from exc
            self._volume = name
            return name

    @contextlib.contextmanager
    def _volume_helper(self, name: str, mode: str) -> Iterator[Container]:
        """A stopped container with volume ``name`` mounted, for its whole use, then removed."""
        with creating("helper") as labels:
            helper = self.client.containers.create(
                self.image,
                command=["true"],
                network_disabled=True,
                labels=labels,
                volumes={name: {"bind": VOLUME_FILL_MOUNT, "mode": mode}},
            )
            try:
                yield helper
            finally:
                remove_container(self.client, container_id_of(helper))

    def _volume_identity(self, name: str) -> str | None:
        try:
            self.client.volumes.get(name)
        except docker.errors.NotFound:
            return None
        with self._volume_helper(name, "ro") as helper:
            try:
                chunks, _ = helper.get_archive(f"{VOLUME_FILL_MOUNT}/{VERIFIER_IDENTITY}")
                with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as archive:
                    for member in archive:
                        content = archive.extractfile(member)
                        return content.read().decode().strip() if content else None
            except docker.errors.NotFound:
                return None
        return None

    def _fill_volume(self, name: str, root: Path) -> None:
        self.client.volumes.create(name, labels={SANDBOX_LABEL + ".verifier": "1"})
        with self._volume_helper(name, "rw") as helper, tempfile.TemporaryFile(dir=self.state_dir) as stream:
            with tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as archive:
                for entry in sorted(root.iterdir()):
                    if entry.name != VERIFIER_IDENTITY:
                        archive.add(entry, arcname=entry.name)
                archive.add(root / VERIFIER_IDENTITY, arcname=VERIFIER_IDENTITY)
            stream.seek(0)
            if not helper.put_archive(VOLUME_FILL_MOUNT, stream):
                raise SandboxError(f"the docker engine refused to fill volume {name}")
