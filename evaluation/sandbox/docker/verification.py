"""The test phase: the agent's state and one test module in a container of their own.

(``DockerSnapshot.verify``) A fresh container with the verifier runtime mounted read-only at
``VERIFIER_MOUNT`` (``volumes``) and a small tmpfs at ``TESTS_MOUNT``. The test module and, when
the agent left anything at /etc/ld.so.preload, an empty file there are written first, while the
container's writable directories hold nothing of the agent's; then the snapshot is unpacked
without its /etc/ld.so.preload. From then on, everything the backend itself starts in that
container (PID 1 and its sleep, the exec wrapper, its timeout, the final kill) is the runtime's,
through the runtime's loader with ``--inhibit-cache``: an agent's /etc/ld.so.cache never reaches
them. A container built on demand starts empty and gets the whole snapshot; one from the warm pool
was seeded with the image's content like an agent's container, and gets only what differs from it
(``evaluation.sandbox.state_diff``: members compared by content hash and every attribute, never by
mtime alone), after the paths the agent removed are deleted, in the same exec. It is removed in
the background once its test has run (``Remover``).
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import IO

from ..archives import build_tar
from ..commands import exec_result
from ..environment import INTERNAL_TIMEOUT, RM, TAR, ExecResult, SandboxError
from ..verifier import PRELOAD_PATH, VERIFIER_ENV, audited, verifier_argv
from .container import TIMEOUT_STATUSES, VERIFIER_TOOLS, DockerSandbox

logger = logging.getLogger(__name__)

# A test module up to this size goes in as an argument of the exec that unpacks the state (Linux
# caps one argument at 128 KiB); a larger one takes an exec of its own first.
INLINE_TEST_BYTES = 100_000
# Paths to delete travel as arguments of that exec too (Linux caps them all at a quarter of the
# stack limit, 2 MiB by default); beyond this the state goes in whole (state_diff's fallback).
MAX_DELETION_BYTES = 256 * 1024
# --numeric-owner: no user-name lookup, so no NSS module named by the agent's
# /etc/nsswitch.conf is ever loaded while unpacking.
_STATE_OPTIONS = ["--numeric-owner", "--anchored", f"--exclude={PRELOAD_PATH.lstrip('/')}"]
_UNPACK_STATE = [TAR, "-x", "-p", *_STATE_OPTIONS, "-C", "/", "-f", "-"]
# Printed once the state is in, right before the verifier starts (see state_then_test).
_STATE_WRITTEN = "veriharm-state-written."


def state_then_test(
    sandbox: DockerSandbox,
    module: str,
    source: str,
    preload: bool,
    archive: IO[bytes],
    deletions: tuple[str, ...],
    timeout: float,
) -> ExecResult:
    """In a test-phase container holding nothing of the agent's yet: write the test module (and the
    empty /etc/ld.so.preload that masks the agent's), unpack the agent's state, then run the test.

    ``deletions``: pristine paths the agent removed, when the container was seeded with the image's
    content and ``archive`` holds only what differs from it; they go first, so nothing of the
    image's that the agent removed is left for the state's tar to merge with.

    The deletions, the test and the mask all happen before any of the agent's files exist in the
    container, and unpacking the state is the last step before the verifier. One exec does it all
    (a docker exec costs tens of milliseconds): the runtime's own shell writes, removes and unpacks,
    prints ``_STATE_WRITTEN``, then becomes the verifier under the test's own deadline. That marker
    opens stdout only once the state is in, so whatever the test does after it -- its exit status
    included -- is a verdict, and its absence an infrastructure failure. A module too large for an
    argument goes in by an exec of its own first."""
    content = source.encode()
    remove = f'&& {RM} -rf -- "$@"' if deletions else ""
    mask = f"&& : > {PRELOAD_PATH}" if preload else ""
    if len(content) > INLINE_TEST_BYTES:
        sandbox._put_tar(build_tar([(module, content, 0o644)]), "the test")
        write, args = ":", [sandbox.workdir]
    else:
        write, args = 'printf "%s" "$2" > "$3"', [sandbox.workdir, source, module]
    seconds = f"{max(timeout, 0.01):.3f}"
    verifier = shlex.join(verifier_argv(module))
    script = (
        f"umask 022 && {write} && w=$1 && shift {len(args)} {remove} {mask} && {shlex.join(_UNPACK_STATE)} && "
        f"printf {_STATE_WRITTEN} && "
        # A missing workdir fails the test, as docker's own chdir would.
        f'{{ cd "$w" || exit 126; }} && '
        f"exec {VERIFIER_TOOLS.timeout} --kill-after=1 -s KILL {seconds} {verifier} </dev/null"
    )
    with sandbox._lock:
        sandbox._check_alive()
        raw = sandbox._run(
            [*VERIFIER_TOOLS.sh, "-c", script, "sh", *args, *deletions],
            timeout=timeout + INTERNAL_TIMEOUT,
            env=VERIFIER_ENV,
            cwd="/",
            stdin=archive,
        )
    if not raw.stdout.startswith(_STATE_WRITTEN.encode()):
        detail = (raw.stderr or raw.stdout).decode("utf-8", "replace").strip()
        status = "timed out" if raw.timed_out else f"exit {raw.exit_code}"
        raise SandboxError(f"cannot write the test and the snapshot: {detail or status}")
    # The verifier's own deadline: it started after the unpacking, so its kill comes at least
    # ``timeout`` after the exec did.
    timed_out = raw.timed_out or (raw.exit_code in TIMEOUT_STATUSES and raw.duration >= timeout)
    return audited(
        exec_result(
            replace(
                raw,
                stdout=raw.stdout[len(_STATE_WRITTEN) :],
                exit_code=None if timed_out else raw.exit_code,
                timed_out=timed_out,
            )
        )
    )


class Remover:
    """Removes finished test containers in the background, off the trial's path.

    Removing a container takes the engine tens of milliseconds that a verdict does not wait for.
    The sandbox is marked destroyed at once (nothing runs in it any more); its container stays
    among this process's live ones until it is gone. ``DockerBackend.drain_pools``, which a worker
    calls as it stops normally, waits for the removals under way, so a normal stop leaves nothing
    behind (a prefork pool child leaves through ``os._exit``: nothing joins its threads at exit);
    after a crash the orphan sweep removes what was still pending."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pid = os.getpid()
        self._pending: set[Future[None]] = set()

    def remove(self, sandbox: DockerSandbox) -> None:
        with sandbox._lock:
            sandbox._destroyed = True
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                # A forked child starts its own (the parent's threads are not its).
                self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="docker-remove")
                self._pid = os.getpid()
                self._pending = set()
            try:
                future = self._executor.submit(self._destroy, sandbox)
            except RuntimeError:  # the interpreter is shutting down: no new threads
                future = None
            if future is not None:
                self._pending.add(future)
                future.add_done_callback(self._done)
        if future is None:
            sandbox.destroy()

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)

    @staticmethod
    def _destroy(sandbox: DockerSandbox) -> None:
        try:
            sandbox.destroy()
        except SandboxError as exc:  # the orphan sweep removes it later
            logger.warning("could not remove container %s: %s", sandbox.id[:12], exc)

    def wait(self) -> None:
        """Until every removal asked for so far is done."""
        with self._lock:
            pending = list(self._pending) if self._pid == os.getpid() else []
        for future in pending:
            future.result()
