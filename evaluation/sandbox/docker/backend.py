"""The "docker" backend: one container per sandbox, driven through the Docker SDK.

It puts the package's parts together: containers (``container``), seeded with the image's content
(``seeding``), kept ready by warm pools (``evaluation.sandbox.pool``), snapshotted from outside
(``snapshots``), tested beside the verifier runtime's volume (``verification``, ``volumes``), and
swept when their owner dies (``orphans``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

import docker
import docker.errors

from ..archives import open_archive
from ..environment import DEFAULT_SETUP_TIMEOUT, Environment, Limits, SandboxError, plan_writable_mounts, read_identity
from ..images import VERIFIER_IDENTITY, default_image, require_verifier_root
from ..interface import SandboxBackend
from ..network import ModelAccess
from ..pool import WarmPool
from ..state_diff import Signature, StateIndex
from .container import ContainerSpec, DockerSandbox, destroy_sandbox, start, tmpfs_sizes
from .orphans import cleanup_orphans, snapshot_file
from .seeding import ImageSeeds
from .snapshots import DockerSnapshot, take_snapshot, tar_state
from .verification import Remover
from .volumes import VerifierVolume


class DockerBackend(SandboxBackend):
    name = "docker"

    def __init__(
        self,
        *,
        image: str | None = None,
        client: docker.DockerClient | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        setup_timeout: float = DEFAULT_SETUP_TIMEOUT,
        pool_size: int = 0,
        pool_environments: int = 4,
    ) -> None:
        """``pool_size``: trials' worth of containers kept started ahead of time per environment
        (0: none), for at most ``pool_environments`` environments (see evaluation.sandbox.pool)."""
        self.image = image or default_image()
        try:
            self.client = client or docker.from_env(timeout=300)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"no Docker engine answers (scripts/start_docker.sh starts one): {exc}") from exc
        self.state_dir = Path(state_dir) if state_dir else Path(tempfile.gettempdir()) / "veriharm-docker-snapshots"
        self.setup_timeout = setup_timeout
        self._images = ImageSeeds(self.client)
        self._manifests: dict[tuple[str, tuple[str, ...]], dict[str, Signature]] = {}
        self._manifest_lock = threading.Lock()
        self._verifier = VerifierVolume(self.client, self.image, self.state_dir)
        self._image_ids: dict[str, str] = {}
        self._remover = Remover()
        # Warm pools (evaluation.sandbox.pool): started, seeded agent containers, and seeded
        # test-phase containers (two per trial), per sandbox spec.
        self._agent_pool: WarmPool[ContainerSpec, DockerSandbox] = WarmPool(
            "docker-agent", self._new_agent_container, destroy_sandbox, size=pool_size, max_keys=pool_environments
        )
        self._test_pool: WarmPool[ContainerSpec, DockerSandbox] = WarmPool(
            "docker-test", self._new_test_container, destroy_sandbox, size=2 * pool_size, max_keys=pool_environments
        )

    # -- create ------------------------------------------------------------------
    def _spec(self, environment: Environment, limits: Limits) -> tuple[ContainerSpec, bytes]:
        """The spec of a sandbox of ``environment`` (tmpfs sizes included) and its seed tar."""
        spec = ContainerSpec(
            image=environment.image or self.image,
            workdir=environment.workdir,
            mounts=plan_writable_mounts(environment),
            limits=limits,
        )
        seed, seed_sizes = self._images.seed(spec)
        sizes = tmpfs_sizes(spec.mounts, spec.workdir, limits.disk_mb, seed_sizes)
        return replace(spec, sizes=tuple(sizes.items())), seed

    def create(
        self, environment: Environment, limits: Limits = Limits(), *, model: ModelAccess | None = None
    ) -> DockerSandbox:
        spec, seed = self._spec(environment, limits)
        sandbox = None
        if model is not None:
            # The gateway's socket is a volume, fixed when the container starts: never pooled.
            harness = model.harness_root.resolve() if model.harness_root else None
            spec = replace(spec, gateway=str(model.socket_dir.resolve()), harness=str(harness) if harness else None)
        else:
            sandbox = self._agent_pool.take(spec)
            if self._test_pool.enabled:
                # The test phase of this trial will want its containers too: start them now.
                self._test_pool.warm(self._test_spec(spec))
        if sandbox is None:
            sandbox = self._new_agent_container(spec, seed)
        try:
            sandbox._apply_environment(environment, self.setup_timeout)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def _new_agent_container(self, spec: ContainerSpec, seed: bytes | None = None) -> DockerSandbox:
        """A started container holding the image's content of its writable directories."""
        if seed is None:
            seed = self._images.seed(spec)[0]
        sandbox = self._start(spec)
        try:
            sandbox._put_tar(seed, f"the image's content of {', '.join(spec.mounts)}")
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def _new_test_container(self, spec: ContainerSpec) -> DockerSandbox:
        """A test-phase container holding the image's content of its writable directories, for
        the pool: a trial then sends it only what its agent changed (``DockerSnapshot.verify``).
        Seeded by the same tar, from the same archive, as an agent's container."""
        key, (seed, _) = self._images.seed_with_key(spec)
        self._pristine_manifest(spec, key)  # made now, off the trial's path
        sandbox = self._new_agent_container(spec, seed)
        sandbox.seeded = key
        return sandbox

    def _pristine_manifest(self, spec: ContainerSpec, key: tuple[str, tuple[str, ...]]) -> dict[str, Signature]:
        """Name -> signature of every member a snapshot of a container freshly seeded with ``key``
        holds; made once per key, in a container of ``spec``'s shape.

        Taken from such a snapshot, made by the very command that makes an agent's, rather than from
        the seed archive: what tar records of a seeded file is what a final state is compared with."""
        with self._manifest_lock:
            manifest = self._manifests.get(key)
            if manifest is not None:
                return manifest
            image_id, mounts = key
            plain = replace(spec, image=image_id, mounts=mounts, verifier=None, gateway=None, harness=None)
            sandbox = self._new_agent_container(plain, self._images.cached(key)[0])
            try:
                with tempfile.TemporaryFile(dir=self._state_dir()) as archive:
                    tar_state(sandbox, archive)
                    archive.seek(0)
                    manifest = StateIndex.read(archive.read()).manifest()
            finally:
                sandbox.destroy()
            self._manifests[key] = manifest
            return manifest

    def _test_spec(self, spec: ContainerSpec) -> ContainerSpec:
        return replace(spec, gateway=None, harness=None, verifier=self._verifier.name())

    def _test_container(self, spec: ContainerSpec) -> DockerSandbox:
        """A test-phase container (verifier runtime mounted, nothing of the agent's yet): seeded with the
        image's content when the pool had one ready, else empty."""
        test_spec = self._test_spec(spec)
        return self._test_pool.take(test_spec) or self._start(test_spec)

    def pooled(self) -> list:
        """Every sandbox the pools hold ready now."""
        return [*self._agent_pool.members(), *self._test_pool.members()]

    def wait_warm(self, environment: Environment, limits: Limits | None = None, timeout: float = 60.0) -> bool:
        """Ask for ``environment``'s sandboxes to be kept ready and wait until they are (True), at
        most ``timeout`` seconds."""
        spec, _ = self._spec(environment, limits or Limits())
        self._agent_pool.warm(spec)
        self._test_pool.warm(self._test_spec(spec))
        return self._agent_pool.wait_ready(spec, timeout) and self._test_pool.wait_ready(self._test_spec(spec), timeout)

    def wait_pools_idle(self, timeout: float = 60.0) -> bool:
        """Until the pools build nothing and want nothing (True), at most ``timeout`` seconds each."""
        return self._agent_pool.wait_idle(timeout) and self._test_pool.wait_idle(timeout)

    def drain_pools(self) -> None:
        """Remove every container kept ready (the pools stop refilling), and wait for the test
        containers still being removed."""
        self._agent_pool.drain()
        self._test_pool.drain()
        self._remover.wait()

    def wait_removed(self) -> None:
        """Until the test containers of the trials run so far are removed (benchmarks: a quiet engine)."""
        self._remover.wait()

    def restore_archive(self, environment: Environment, limits: Limits, path: Path) -> DockerSandbox:
        spec, _ = self._spec(environment, limits)
        sandbox = self._start(spec)
        try:
            sandbox.unpack_archive(path)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def load_archive(self, environment: Environment, limits: Limits, path: Path) -> DockerSnapshot:
        # A snapshot is a tar on the host: decompressing the archive is all it takes,
        # and no container runs the agent's state to make it.
        spec, _ = self._spec(environment, limits)
        target = self._snapshot_path()
        snapshot = DockerSnapshot(self, spec, target)
        try:
            with open_archive(path) as archive, open(target, "wb") as out:
                shutil.copyfileobj(archive, out, 1024 * 1024)
        except (OSError, EOFError) as exc:
            snapshot.discard()
            raise SandboxError(f"cannot read archive {path}: {exc}") from exc
        except BaseException:
            snapshot.discard()
            raise
        return snapshot

    def system_identity(self, environment: Environment) -> str:
        image = environment.image or self.image
        image_id = self._image_ids.get(image)
        if image_id is None:
            image_id = self._image_ids[image] = self._images.image_id(image)
        verifier = read_identity(require_verifier_root() / VERIFIER_IDENTITY, "verifier runtime")
        return f"docker image {image_id} verifier {verifier}"

    def _start(self, spec: ContainerSpec) -> DockerSandbox:
        return start(self, spec)

    # -- snapshots ----------------------------------------------------------------
    def _state_dir(self) -> Path:
        self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.state_dir

    def _snapshot_path(self) -> Path:
        return snapshot_file(self._state_dir())

    def _snapshot(self, sandbox: DockerSandbox) -> DockerSnapshot:
        return take_snapshot(self, sandbox, self._snapshot_path())

    def cleanup_orphans(self) -> int:
        return cleanup_orphans(self.client, self.state_dir)
