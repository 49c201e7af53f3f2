"""Where the sandbox base system lives, and how to (re)build it.

One debootstrap tree serves both backends: the bubblewrap backend binds it
read-only as "/", and the docker backend runs it as an image imported from the
same tree. Beside the tree, the verifier runtime (an interpreter, pytest and
their libraries copied out of it) serves the test phase of both backends. All
are made by ``scripts/build_sandbox_image.sh``, which also writes their
identities; the functions here locate them and call the scripts when asked to.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from .environment import SandboxError
from .verifier import BOOTSTRAP_SOURCE, VERIFIER_BOOTSTRAP, VERIFIER_MOUNT

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPTS_DIR = REPO_ROOT / "scripts"
BUILD_SCRIPT = SCRIPTS_DIR / "build_sandbox_image.sh"
START_DOCKER_SCRIPT = SCRIPTS_DIR / "start_docker.sh"

DEFAULT_IMAGE = "veriharm-sandbox:bookworm"
# Written by the build script after debootstrap succeeded; its absence means the
# tree is partial.
COMPLETE_MARKER = ".veriharm-complete"
# sha256 of the tree's package list, and of the verifier runtime's manifest.
TREE_IDENTITY = ".veriharm-id"
VERIFIER_IDENTITY = ".veriharm-verifier-id"
# Every file of the verifier runtime, headed by its recipe.
VERIFIER_MANIFEST = ".veriharm-manifest"
HARNESS_IDENTITY = ".veriharm-harness-id"
# The harness runtimes the build script makes (one directory each under harness_root()).
HARNESS_RUNTIMES = tuple(sorted(p.name for p in (SCRIPTS_DIR / "harnesses").iterdir() if p.is_dir()))


def sandbox_root() -> Path:
    """The debootstrap tree (``VERIHARM_SANDBOX_ROOT`` or ``<repo>/.cache/sandbox-root``)."""
    configured = os.environ.get("VERIHARM_SANDBOX_ROOT")
    return Path(configured) if configured else REPO_ROOT / ".cache" / "sandbox-root"


def verifier_root() -> Path:
    """The verifier runtime (``VERIHARM_VERIFIER_ROOT`` or the default tree's path + ``-verifier``).

    One runtime for every backend and tree: a backend given another tree (e.g. the
    same tree bind-mounted elsewhere) still judges with this one.
    """
    configured = os.environ.get("VERIHARM_VERIFIER_ROOT")
    return Path(configured) if configured else Path(f"{sandbox_root()}-verifier")


def harness_root() -> Path:
    """The harness runtimes (``VERIHARM_HARNESS_ROOT`` or the default tree's path + ``-harness``),
    one directory per harness, mounted read-only at HARNESS_MOUNT in network mode model."""
    configured = os.environ.get("VERIHARM_HARNESS_ROOT")
    return Path(configured) if configured else Path(f"{sandbox_root()}-harness")


def harness_is_complete(name: str) -> bool:
    return (harness_root() / name / HARNESS_IDENTITY).is_file()


def require_harness(name: str) -> Path:
    """The runtimes' directory, once ``name``'s runtime is known to be complete."""
    if not harness_is_complete(name):
        raise SandboxError(
            f"harness runtime {harness_root() / name} is missing or incomplete; build it with "
            "scripts/build_sandbox_image.sh"
        )
    return harness_root()


def verifier_recipe() -> str:
    """The recipe line that heads a current runtime's manifest (``VERIFIER_RECIPE`` of the build script)."""
    found = re.search(r'^VERIFIER_RECIPE="([^"]+)"$', BUILD_SCRIPT.read_text(), re.MULTILINE)
    if found is None:
        raise SandboxError(f"{BUILD_SCRIPT} names no VERIFIER_RECIPE")
    return found.group(1)


def verifier_is_complete() -> bool:
    """The runtime is built, by the build script's current recipe, with this checkout's bootstrap.

    An older one (another recipe, another bootstrap) counts as incomplete: the build script
    rebuilds it, and until then no test runs with a verifier other than the one recorded."""
    directory = verifier_root()
    try:
        return (
            (directory / VERIFIER_IDENTITY).is_file()
            and (directory / "loader").exists()
            and (directory / VERIFIER_MANIFEST).read_text().partition("\n")[0] == verifier_recipe()
            and (directory / VERIFIER_BOOTSTRAP.removeprefix(VERIFIER_MOUNT + "/")).read_bytes()
            == BOOTSTRAP_SOURCE.read_bytes()
        )
    except OSError:
        return False


def require_verifier_root() -> Path:
    directory = verifier_root()
    if not verifier_is_complete():
        raise SandboxError(
            f"verifier runtime {directory} is missing, incomplete or outdated; build it with "
            "scripts/build_sandbox_image.sh"
        )
    return directory


def default_image() -> str:
    return os.environ.get("VERIHARM_SANDBOX_IMAGE") or DEFAULT_IMAGE


def system_missing(runtimes: Iterable[str] = (), root: Path | None = None) -> list[str]:
    """What a sandbox running the harness runtimes `runtimes` lacks of the sandbox system, each part
    named with its path; empty when it is ready. The one definition of "ready": the launch page and
    refusal, `demo_evaluate --wait`, a trial's and a generation search's precondition
    (`evaluation.agents.sandbox_status`) and the backends' own checks all ask it.

    Every sandbox needs the tree (complete, with its identity) and the verifier runtime made by the
    current recipe; only an agent that runs a harness needs that harness's runtime, so a trial of a
    scripted agent, or of one harness, never waits for the build of another. (A tree built before
    identities and the verifier existed counts as incomplete: the build script adds what is missing
    without rebuilding.)
    """
    root = root or sandbox_root()
    missing = []
    if not (
        (root / COMPLETE_MARKER).is_file()
        and (root / TREE_IDENTITY).is_file()
        and (root / "usr" / "bin" / "python3").exists()
    ):
        missing.append(f"sandbox root tree {root} is missing or incomplete")
    if not verifier_is_complete():
        missing.append(f"verifier runtime {verifier_root()} is missing, incomplete or outdated")
    missing.extend(
        f"harness runtime {harness_root() / name} is missing or incomplete"
        for name in sorted(set(runtimes))
        if not harness_is_complete(name)
    )
    return missing


def system_ready(runtimes: Iterable[str] = (), root: Path | None = None) -> bool:
    return not system_missing(runtimes, root)


def require_system(runtimes: Iterable[str] = (), root: Path | None = None) -> Path:
    """The root tree, once the system a sandbox running `runtimes` needs is ready; else SandboxError
    naming each missing part."""
    root = root or sandbox_root()
    missing = system_missing(runtimes, root)
    if missing:
        raise SandboxError(f"{'; '.join(missing)}; build it with scripts/build_sandbox_image.sh")
    return root


def root_is_complete(root: Path | None = None) -> bool:
    """Everything the build script makes is there: the system with every harness runtime (what a
    build, or a test suite building it once, waits for; a trial needs less: `system_ready`)."""
    return system_ready(HARNESS_RUNTIMES, root)


BUILD_LOCK = ".sandbox-root.lock"


def build_running(root: Path | None = None) -> bool:
    """A build of the system holds its lock file (beside the tree, whatever started the build)."""
    lock = (root or sandbox_root()).parent / BUILD_LOCK
    if not lock.is_file():
        return False
    with open(lock, "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def _run_script(script: Path, timeout: float) -> None:
    try:
        completed = subprocess.run(
            ["bash", str(script)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise SandboxError(f"{script.name} did not finish within {timeout:.0f}s") from exc
    if completed.returncode != 0:
        raise SandboxError(
            f"{script.name} failed (exit {completed.returncode}):\n{completed.stderr[-4000:]}{completed.stdout[-2000:]}"
        )


def build_sandbox_base(timeout: float = 900.0) -> None:
    """Build the root tree and, if a Docker engine answers, the image (idempotent)."""
    _run_script(BUILD_SCRIPT, timeout)


def start_docker_engine(timeout: float = 120.0) -> None:
    """Start a local dockerd unless one answers already (idempotent)."""
    _run_script(START_DOCKER_SCRIPT, timeout)


def require_root_tree(root: Path | None = None) -> Path:
    """The tree and the verifier runtime every sandbox needs (a harness's runtime is its agent's to require)."""
    return require_system((), root)
