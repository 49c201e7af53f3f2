"""The "local" backend: bubblewrap sandboxes on the host, no daemon.

It puts the package's parts together: sandboxes (``tree``) with writable trees filled from the
system tree or a snapshot (``seeding``), their cgroups (``cgroups``), kept ready by warm pools
(``evaluation.sandbox.pool``), snapshotted and tested (``snapshots``), on a tree and a verifier
runtime the sandbox uids reach (``runtime``), and swept when their owner dies (``orphans``).
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import replace
from pathlib import Path

from ..environment import DEFAULT_SETUP_TIMEOUT, Environment, Limits, SandboxError, plan_writable_mounts, read_identity
from ..images import DEFAULT_IMAGE, TREE_IDENTITY, VERIFIER_IDENTITY, default_image, require_verifier_root, sandbox_root
from ..interface import SandboxBackend
from ..network import ModelAccess
from ..pool import WarmPool
from .cgroups import CgroupSet
from .host import chown_tree, mount_tmpfs
from .orphans import META, cleanup_orphans, default_state_dir, new_dir
from .runtime import preflight, reachable, reachable_verifier
from .seeding import mask_preload, seed_empty, seed_from_copy, seed_from_root, write_test
from .snapshots import LocalSnapshot, copy_snapshot, hand_over
from .tree import UID_BASE, UID_SPAN, LocalSandbox, TreeSpec, destroy_sandbox


class BubblewrapBackend(SandboxBackend):
    name = "local"

    def __init__(
        self,
        *,
        root: str | os.PathLike[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        setup_timeout: float = DEFAULT_SETUP_TIMEOUT,
        pool_size: int = 0,
        pool_environments: int = 4,
    ) -> None:
        """``pool_size``: trials' worth of sandboxes kept ready per environment (0: none), for at
        most ``pool_environments`` environments (see evaluation.sandbox.pool)."""
        self.root = Path(root) if root else sandbox_root()
        self.state_dir = Path(state_dir) if state_dir else default_state_dir()
        self.setup_timeout = setup_timeout
        self._identities: dict[str, str] = {}
        # Agent sandboxes seeded from the system tree, and test-phase shells (a mounted, empty
        # tmpfs with its uid and cgroups; two per trial), per sandbox spec.
        self._agent_pool: WarmPool[TreeSpec, LocalSandbox] = WarmPool(
            "local-agent",
            lambda spec: self._materialize(spec, seed_from=None),
            destroy_sandbox,
            size=pool_size,
            max_keys=pool_environments,
        )
        self._test_pool: WarmPool[TreeSpec, LocalSandbox] = WarmPool(
            "local-test", self._shell, destroy_sandbox, size=2 * pool_size, max_keys=pool_environments
        )

    def pooled(self) -> list:
        """Every sandbox the pools hold ready now."""
        return [*self._agent_pool.members(), *self._test_pool.members()]

    def wait_warm(self, environment: Environment, limits: Limits | None = None, timeout: float = 60.0) -> bool:
        """Ask for ``environment``'s sandboxes to be kept ready and wait until they are (True), at
        most ``timeout`` seconds."""
        spec = self._spec(environment, limits or Limits())
        self._agent_pool.warm(spec)
        self._test_pool.warm(self._test_spec(spec))
        return self._agent_pool.wait_ready(spec, timeout) and self._test_pool.wait_ready(self._test_spec(spec), timeout)

    def wait_pools_idle(self, timeout: float = 60.0) -> bool:
        """Until the pools build nothing and want nothing (True), at most ``timeout`` seconds each."""
        return self._agent_pool.wait_idle(timeout) and self._test_pool.wait_idle(timeout)

    def drain_pools(self) -> None:
        """Destroy every sandbox kept ready (the pools stop refilling)."""
        self._agent_pool.drain()
        self._test_pool.drain()

    # -- create / restore ---------------------------------------------------------
    def _spec(self, environment: Environment, limits: Limits) -> TreeSpec:
        root = preflight(self.root, self.state_dir)
        if environment.image not in (None, DEFAULT_IMAGE, default_image()):
            # Silently running on another system than the task asked for would
            # make results meaningless.
            raise SandboxError(
                f"the local backend only has the default sandbox system; image {environment.image!r} "
                "needs the docker backend"
            )
        return TreeSpec(
            workdir=environment.workdir,
            mounts=plan_writable_mounts(environment),
            limits=limits,
            root=str(root),
        )

    def create(
        self, environment: Environment, limits: Limits = Limits(), *, model: ModelAccess | None = None
    ) -> LocalSandbox:
        spec = self._spec(environment, limits)
        harness = (
            reachable(self.state_dir, model.harness_root.resolve(), "harness") if model and model.harness_root else None
        )
        sandbox = self._agent_pool.take(spec) or self._materialize(spec, seed_from=None)
        if self._test_pool.enabled:
            # This trial's test phase will want its shells too: make them now.
            self._test_pool.warm(self._test_spec(spec))
        try:
            if model is not None:
                sandbox._attach_model(model, harness)
            sandbox._apply_environment(environment, self.setup_timeout)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def restore_archive(self, environment: Environment, limits: Limits, path: Path) -> LocalSandbox:
        sandbox = self._materialize(self._spec(environment, limits), seed_from=None, empty=True)
        try:
            # An archive of a local sandbox only has uid 0, the one identity a local sandbox
            # has; one with other owners (e.g. from docker) is refused by the unpacking.
            sandbox.unpack_archive(path)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def system_identity(self, environment: Environment) -> str:
        key = str(self.root)
        identity = self._identities.get(key)
        if identity is None:
            tree = read_identity(self.root / TREE_IDENTITY, "sandbox tree")
            verifier = read_identity(require_verifier_root() / VERIFIER_IDENTITY, "verifier runtime")
            identity = self._identities[key] = f"local tree {tree} verifier {verifier}"
        return identity

    def _test_spec(self, spec: TreeSpec) -> TreeSpec:
        return replace(spec, gateway=None, harness=None, verifier=str(reachable_verifier(self.state_dir)))

    def _shell(self, spec: TreeSpec) -> LocalSandbox:
        """A sandbox with its own uid, an empty writable tmpfs and its cgroups, nothing in it yet."""
        spec = replace(spec, root=str(preflight(self.root, self.state_dir)))
        uid = UID_BASE + secrets.randbelow(UID_SPAN)
        sid, directory = new_dir(self.state_dir, "sbx", {"uid": uid, "cgroups": {}})
        sandbox = LocalSandbox(self, spec, sid, uid)
        try:
            rw = directory / "rw"
            rw.mkdir(mode=0o711)
            mount_tmpfs(rw, spec.limits.disk_mb, 0o711)
            cgroups = CgroupSet.create(sid, spec.limits, uid)
            sandbox._set_cgroups(cgroups)
            meta_path = directory / META
            record = json.loads(meta_path.read_text())
            record["cgroups"] = cgroups.dirs
            meta_path.write_text(json.dumps(record))
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def _materialize(
        self,
        spec: TreeSpec,
        seed_from: Path | None,
        *,
        empty: bool = False,
        test: tuple[str, bytes] | None = None,
        shell: LocalSandbox | None = None,
    ) -> LocalSandbox:
        """A sandbox whose writable tree is seeded from the root tree or a snapshot copy
        (or left empty); ``test`` (name, content) makes it a test-phase copy. ``shell`` is one
        ``_shell`` made earlier for the same spec (a pool's), else one is made now."""
        sandbox = shell or self._shell(spec)
        spec, rw = sandbox.spec, sandbox.rw
        try:
            if empty:
                seed_empty(spec, rw)
            elif seed_from is None:
                seed_from_root(spec, rw)
            else:
                seed_from_copy(seed_from, rw)
            if test is not None:
                mask_preload(rw)
                write_test(sandbox.tests, *test)
            # Everything writable belongs to the sandbox uid ("root" inside). -h: a
            # symlink's own owner changes, never its target's.
            chown_tree(rw, sandbox.uid)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    # -- snapshots ---------------------------------------------------------------
    def _snapshot(self, sandbox: LocalSandbox) -> LocalSnapshot:
        return copy_snapshot(self, sandbox)

    def _final_snapshot(self, sandbox: LocalSandbox) -> LocalSnapshot:
        return hand_over(self, sandbox)

    # -- orphans -----------------------------------------------------------------
    def cleanup_orphans(self) -> int:
        return cleanup_orphans(self.state_dir)
