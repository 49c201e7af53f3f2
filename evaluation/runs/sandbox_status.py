"""Whether the sandbox system trials run on is built, being built, waiting for system packages, or
failed to build.

`make run` builds it in the background on first start (scripts/run_local.sh runs
scripts/build_sandbox_image.sh and records "building", then "ready" or "failed", in the state file
beside its log; "waiting" while bubblewrap or debootstrap is missing, until they are installed). Whatever started a build, the build script holds its lock file while it works, so
a held lock means "building". The launch page shows the state, and `services.run_launch` refuses
while the system is not ready: a trial launched before would only fail its attempts.
"""

from __future__ import annotations

import fcntl
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from evaluation.sandbox import images

READY, BUILDING, WAITING, FAILED, MISSING = "ready", "building", "waiting", "failed", "missing"
LOG_TAIL_LINES = 25
BUILD_SCRIPT = "scripts/build_sandbox_image.sh"


@dataclass(frozen=True)
class SandboxStatus:
    state: str
    log_tail: str = ""

    @property
    def ready(self) -> bool:
        return self.state == READY

    @property
    def explanation(self) -> str:
        if self.state == READY:
            return "The sandbox system is built: trials can run."
        if self.state == BUILDING:
            return (
                f"The sandbox system is being built ({BUILD_SCRIPT}, about 2-3 minutes on first start, log "
                f"{build_log()}); launching waits until it is ready."
            )
        if self.state == WAITING:
            return (
                "The sandbox system cannot be built yet: system packages it needs are missing (the log names them "
                "and the command that installs them). make run checks every few seconds and builds it once they "
                "are installed; launching waits until it is ready."
            )
        if self.state == FAILED:
            return (
                f"Building the sandbox system failed (log {build_log()}); fix the cause and run {BUILD_SCRIPT} "
                "(it needs root, debootstrap and bubblewrap); launching waits until it is ready."
            )
        return (
            f"The sandbox system is not built yet: build it once with {BUILD_SCRIPT} (needs root, debootstrap "
            "and bubblewrap)."
        )

    def refusal(self, backend: str) -> str:
        return f"backend {backend} cannot run trials yet: {self.explanation}"


def build_log() -> Path:
    return Path(settings.VERIHARM_SANDBOX_BUILD_LOG)


def build_state_file() -> Path:
    return Path(settings.VERIHARM_SANDBOX_BUILD_STATE)


def _is_built() -> bool:
    root = images.sandbox_root()
    return (
        (root / images.COMPLETE_MARKER).is_file()
        and (root / images.TREE_IDENTITY).is_file()
        and images.verifier_is_complete()
    )


def _build_running() -> bool:
    lock = images.sandbox_root().parent / ".sandbox-root.lock"
    if not lock.is_file():
        return False
    with open(lock, "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def _log_tail() -> str:
    try:
        lines = build_log().read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL_LINES:])


def sandbox_status() -> SandboxStatus:
    # The tree and the verifier runtime are all a trial needs (each is moved into place only when
    # complete); the build may go on with the harness runtimes and the Docker image meanwhile.
    if _is_built():
        return SandboxStatus(READY)
    if _build_running():
        return SandboxStatus(BUILDING, _log_tail())
    try:
        recorded = build_state_file().read_text(encoding="utf-8").strip()
    except OSError:
        recorded = ""
    if recorded == FAILED:
        return SandboxStatus(FAILED, _log_tail())
    if recorded == WAITING:
        return SandboxStatus(WAITING, _log_tail())
    if recorded == BUILDING:
        # Recorded as building but no build holds the lock: the build was stopped before it ended.
        return SandboxStatus(FAILED, _log_tail() or "the build stopped before it ended and left no log")
    return SandboxStatus(MISSING, _log_tail())
