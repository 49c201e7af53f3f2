"""The sandbox interface every backend implements, plus the parts they share, in one import.

Agent code only ever runs behind this interface. Two invariants hold for every
backend and the trial protocol relies on them:

* Processes never outlive the ``exec`` call that started them. A background
  process left running could watch for the hidden tests to be written and tamper
  with them, so each exec ends by killing everything inside the sandbox.
* The system is read-only except a fixed set of writable directories
  (``WRITABLE_SYSTEM_DIRS`` plus the top-level directory holding the workdir),
  each size-capped, so a sandbox can never fill the host's disk and a snapshot
  only needs to copy those directories.

The tests run on a restored copy of what the agent left, so that copy is
agent-shaped through and through (a ``python3`` shim in /usr/local/bin, a
``sitecustomize``, a ``conftest.py``, an ``/etc/ld.so.preload`` or
``/etc/ld.so.cache``...). ``Snapshot.verify`` therefore never runs anything of
it: the interpreter and pytest come from the *verifier runtime*, a read-only
directory made by ``scripts/build_sandbox_image.sh`` outside any sandbox's
writable state and mounted at ``VERIFIER_MOUNT`` only in the test phase; it is
started through its own dynamic loader with ``--inhibit-cache`` and its own
libraries, in isolated mode without ``site`` and with a fixed environment, on the
runtime's bootstrap, which sets the module search path to the runtime's own
directories and checks the interpreter against the runtime's manifest before the
test is collected (``verifier_bootstrap``; a failed check is ``VerifierAuditFailed``,
no verdict); the test module lives in ``TESTS_MOUNT``, outside the agent's tree. The one input the loader reads
whatever it is told is ``/etc/ld.so.preload``; in the test phase that path
holds an empty file wherever the agent left anything there (file, symlink,
directory...), and nothing where it left nothing (see ``PRELOAD_PATH``). What
a test itself runs (``subprocess.run(["./solution.sh"])``) is the agent's
system, as it should be: that is what the test examines.

The parts live in modules named for what they do, and this module names them all, so that a caller
outside the sandbox imports the interface from one place (the sandbox's own modules import each part
from its module):

- ``environment``: the writable layout, the task's ``Environment``, ``Limits``, ``ExecResult``,
  ``SandboxError``
- ``verifier``: the verifier runtime's command line and environment, its audit (``audited``)
- ``archives``: final-state archives (``GzipArchiveWriter``, ``ArchiveInfo``) and ``build_tar``
- ``interface``: ``Sandbox``, ``Snapshot``, ``SandboxBackend``, ``UseGate``
- ``commands``: ``CommandSandbox`` on its one primitive ``_run``, ``RawResult``, ``exec_result``
"""

from __future__ import annotations

from .archives import (
    ArchiveInfo,
    ArchiveTooLarge,
    GzipArchiveWriter,
    build_tar,
    export_tar_file,
    open_archive,
)
from .commands import (
    ByteSink,
    CommandSandbox,
    OutputCollector,
    RawResult,
    exec_result,
)
from .environment import (
    BASE_ENV,
    BASH,
    DEFAULT_PATH,
    DEFAULT_SETUP_TIMEOUT,
    INTERNAL_TIMEOUT,
    MAX_OUTPUT_BYTES,
    PROTECTED_TOP_DIRS,
    RM,
    SANDBOX_HOME,
    SANDBOX_HOSTNAME,
    SANDBOX_LABEL,
    SH,
    TAR,
    TIMEOUT,
    WRITABLE_SYSTEM_DIRS,
    Environment,
    ExecResult,
    Limits,
    SandboxError,
    inode_cap,
    normalize_sandbox_path,
    plan_writable_mounts,
    read_identity,
)
from .interface import (
    Sandbox,
    SandboxBackend,
    Snapshot,
    UseGate,
)
from .verifier import (
    BOOTSTRAP_SHA256,
    BOOTSTRAP_SOURCE,
    PRELOAD_PATH,
    TESTS_MOUNT,
    VERIFIER_BOOTSTRAP,
    VERIFIER_ENV,
    VERIFIER_LIBS,
    VERIFIER_LOADER,
    VERIFIER_MOUNT,
    VERIFIER_PYTEST_OPTIONS,
    VERIFIER_PYTHON,
    VERIFIER_PYTHON_OPTIONS,
    VerifierAuditFailed,
    audited,
    hidden_test_name,
    verifier_argv,
    verifier_command_line,
)

__all__ = [
    "ArchiveInfo",
    "ArchiveTooLarge",
    "BASE_ENV",
    "BASH",
    "BOOTSTRAP_SHA256",
    "BOOTSTRAP_SOURCE",
    "ByteSink",
    "CommandSandbox",
    "DEFAULT_PATH",
    "DEFAULT_SETUP_TIMEOUT",
    "Environment",
    "ExecResult",
    "GzipArchiveWriter",
    "INTERNAL_TIMEOUT",
    "Limits",
    "MAX_OUTPUT_BYTES",
    "OutputCollector",
    "PRELOAD_PATH",
    "PROTECTED_TOP_DIRS",
    "RM",
    "RawResult",
    "SANDBOX_HOME",
    "SANDBOX_HOSTNAME",
    "SANDBOX_LABEL",
    "SH",
    "Sandbox",
    "SandboxBackend",
    "SandboxError",
    "Snapshot",
    "TAR",
    "TESTS_MOUNT",
    "TIMEOUT",
    "UseGate",
    "VERIFIER_BOOTSTRAP",
    "VERIFIER_ENV",
    "VERIFIER_LIBS",
    "VERIFIER_LOADER",
    "VERIFIER_MOUNT",
    "VERIFIER_PYTEST_OPTIONS",
    "VERIFIER_PYTHON",
    "VERIFIER_PYTHON_OPTIONS",
    "VerifierAuditFailed",
    "WRITABLE_SYSTEM_DIRS",
    "audited",
    "build_tar",
    "exec_result",
    "export_tar_file",
    "hidden_test_name",
    "inode_cap",
    "normalize_sandbox_path",
    "open_archive",
    "plan_writable_mounts",
    "read_identity",
    "verifier_argv",
    "verifier_command_line",
]
