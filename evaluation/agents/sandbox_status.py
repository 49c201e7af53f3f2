"""Whether the sandbox system trials run on is built, being built, waiting for system packages, or
failed to build.

`make run` builds it in the background on first start (scripts/run_local.sh runs
scripts/build_sandbox_image.sh and records "building", then "ready" or "failed", in the state file
beside its log; "waiting" while bubblewrap or debootstrap is missing, until they are installed). Whatever started a build, the build script holds its lock file while it works, so
a held lock means "building".

Ready is `evaluation.sandbox.images.system_missing` of the harness runtimes asked about (none: the
tree and the verifier runtime every sandbox needs), the same rule the backends check. The launch
page shows the state of that base system; a launch (`run_launch`, `generation_launch`, a retry) is
refused while the system its agents need is not ready, and `demo_evaluate --wait` waits for the
scripted demo agents' (no harness). A trial or search a worker takes while that system is being
built (or waits for system packages, which `make run` builds on as soon as they are there) is put
back in the queue without spending an attempt (`waits`); one that finds it failed or missing runs
its attempt, which fails on the backend's own check of the same rule.

It lives beside the agents because what it asks is theirs: the system a set of agents needs is the
base tree and the harness runtimes their recipes run (`runtimes_of`), and both launches and both
workers already stand on the agents, so none of them reaches into another's package to ask it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from evaluation.agents.factory import agent_runtimes
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
    def waits(self) -> bool:
        """Not ready, but a build is running or starts by itself: work that needs it waits for it."""
        return self.state in (BUILDING, WAITING)

    @property
    def explanation(self) -> str:
        if self.state == READY:
            return "The sandbox system is built: trials can run."
        if self.state == BUILDING:
            return (
                f"The sandbox system is being built ({BUILD_SCRIPT}, about 2-3 minutes on first start; the launch "
                "page shows its log); launching waits until it is ready."
            )
        if self.state == WAITING:
            return (
                "The sandbox system cannot be built yet: system packages it needs are missing (the log names them "
                "and the command that installs them). make run checks every few seconds and builds it once they "
                "are installed; launching waits until it is ready."
            )
        if self.state == FAILED:
            return (
                "Building the sandbox system failed (the launch page shows the end of its log); an operator fixes "
                f"the cause and runs {BUILD_SCRIPT} (it needs root, debootstrap and bubblewrap); launching waits "
                "until it is ready."
            )
        return (
            f"The sandbox system is not built yet: an operator builds it once with {BUILD_SCRIPT} (needs root, "
            "debootstrap and bubblewrap), or starts the application with make run, which builds it."
        )

    def refusal(self, backend: str) -> str:
        return f"backend {backend} cannot run trials yet: {self.explanation}"


# A part of the sandbox system the backends' check found missing (`images.system_missing`), as a
# stored error of a trial or search says it, with the advice that followed it.
_MISSING_PART = re.compile(
    r"(?P<part>sandbox root tree|verifier runtime|harness runtime) (?P<path>\S+) is missing[^;]*"
    r"(?:; (?=(?:sandbox root tree|verifier runtime|harness runtime) )|; build it with \S+)?"
)


def _host_paths() -> list[tuple[str, str]]:
    """The host's paths a stored error may name, longest first, each with the words that replace it."""
    paths = [
        (images.harness_root(), "the harness runtimes"),
        (images.verifier_root(), "the verifier runtime"),
        (images.sandbox_root(), "the sandbox root tree"),
        (build_log(), "the sandbox build log"),
        (Path(settings.VERIHARM_IMPORT_DIR), "the import folder"),
        (Path(settings.BASE_DIR), "the application folder"),
    ]
    return sorted(((str(path), words) for path, words in paths), key=lambda pair: -len(pair[0]))


def error_for_readers(error: str) -> str:
    """A stored error of a trial or search as a reader should read it now: a sandbox system that was
    missing when the work ran is said as it is now (built since: run it again; still being built,
    or failed: what the launch page says), and the host's paths are named in words."""
    if not error:
        return error
    found = list(_MISSING_PART.finditer(error))
    if found:
        runtimes = [Path(m["path"]).name for m in found if m["part"] == "harness runtime"]
        status = sandbox_status(runtimes)
        now = (
            "the sandbox system was not ready when this ran; it is built now, so running it again works"
            if status.ready
            else "the sandbox system was not ready when this ran. Now: " + status.explanation
        )
        error = error[: found[0].start()] + now + error[found[-1].end() :]
    for path, words in _host_paths():
        error = error.replace(path, words)
    return error


def build_log() -> Path:
    return Path(settings.VERIHARM_SANDBOX_BUILD_LOG)


def build_state_file() -> Path:
    return Path(settings.VERIHARM_SANDBOX_BUILD_STATE)


def _log_tail() -> str:
    try:
        lines = build_log().read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL_LINES:])


def runtimes_of(agents: Iterable[Any]) -> tuple[str, ...]:
    """The harness runtimes the agents (rows with a kind and a config) run in their sandboxes."""
    return tuple(sorted({name for agent in agents for name in agent_runtimes(agent.kind, agent.config)}))


def sandbox_status(runtimes: Iterable[str] = ()) -> SandboxStatus:
    """The state of the sandbox system a sandbox running the harness runtimes `runtimes` needs."""
    if images.system_ready(runtimes):
        return SandboxStatus(READY)
    if images.build_running():
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
