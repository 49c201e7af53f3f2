"""The verifier runtime's command line: how a test module runs on the agent's final state.

The tests run on a restored copy of what the agent left, so nothing of that copy runs them: the
interpreter and pytest come from the read-only verifier runtime mounted at ``VERIFIER_MOUNT`` in the
test phase only, started through its own loader and libraries, isolated, without ``site``, in a
fixed environment, on its bootstrap (``verifier_bootstrap``), whose audit failing is
``VerifierAuditFailed`` (``evaluation.sandbox.base`` tells the whole story).
"""

from __future__ import annotations

import hashlib
import pathlib
import posixpath
import secrets
import shlex
from collections.abc import Mapping

from .environment import DEFAULT_PATH, SANDBOX_HOME, ExecResult, SandboxError
from .verifier_bootstrap import AUDIT_MARKER, AUDIT_STATUS, TESTS_DIR

# The verifier runtime (see the module docstring) and the directory holding the test
# module, both mounted only in the test phase, at top-level paths no sandbox can
# write. The runtime's "loader" and "libs" are links the build script makes to the
# tree's ld.so and library directory, so the command line is the same on every
# architecture.
VERIFIER_MOUNT = "/.veriharm-verifier"
# The bootstrap allows this directory on the module search path, beside the runtime's.
TESTS_MOUNT = TESTS_DIR
VERIFIER_LOADER = f"{VERIFIER_MOUNT}/loader"
VERIFIER_LIBS = f"{VERIFIER_MOUNT}/libs"
VERIFIER_PYTHON = f"{VERIFIER_MOUNT}/usr/bin/python3"
# The verifier's entry point: verifier_bootstrap.py, copied into the runtime by the build script
# (evaluation.sandbox.images refuses a runtime holding another copy).
VERIFIER_BOOTSTRAP = f"{VERIFIER_MOUNT}/bootstrap.py"
BOOTSTRAP_SOURCE = pathlib.Path(__file__).with_name("verifier_bootstrap.py")
BOOTSTRAP_SHA256 = hashlib.sha256(BOOTSTRAP_SOURCE.read_bytes()).hexdigest()
# Interpreter options: isolated (no PYTHON* variables, no user site, neither the working
# directory nor the script's on sys.path), no ``site`` at all, no bytecode written.
VERIFIER_PYTHON_OPTIONS: tuple[str, ...] = ("-I", "-S", "-B")
# pytest's: no cache, no conftest.py, no configuration file, the tests' directory as rootdir.
VERIFIER_PYTEST_OPTIONS: tuple[str, ...] = (
    "-q", "-p", "no:cacheprovider", "--noconftest", "-c", "/dev/null", "--rootdir", TESTS_MOUNT,
)  # fmt: skip
# The dynamic loader reads this file in every process, its own explicit invocation
# included, and no option turns that off: in the test phase it is replaced by an
# empty regular file when the agent left anything at that path (so a test still sees
# that something is there, never what it names), and stays absent otherwise. The
# final-state archive keeps the agent's original.
PRELOAD_PATH = "/etc/ld.so.preload"
# The verifier's whole environment: nothing is inherited. PATH is the sandbox's usual
# one because the tests run the agent's programs (./solution.sh, which...) by name.
VERIFIER_ENV: Mapping[str, str] = {
    "PATH": DEFAULT_PATH,
    "HOME": SANDBOX_HOME,
    "LANG": "C.UTF-8",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}


def verifier_argv(module_path: str) -> list[str]:
    """The command running one test module with the verifier runtime.

    * the runtime's own ld.so, ``--inhibit-cache`` (an agent's /etc/ld.so.cache could
      map libc to its own library) and ``--library-path`` to the runtime's libraries;
    * the runtime's python3 with ``-I -S -B`` (``VERIFIER_PYTHON_OPTIONS``) on the
      runtime's bootstrap (``evaluation.sandbox.verifier_bootstrap``): no ``site``, so no
      sitecustomize, usercustomize or .pth file anywhere is read and no directory is
      added by a fixed path; the bootstrap sets the module search path to the runtime's
      directories, checks the interpreter against the runtime's manifest before the test
      is collected, and runs pytest in-process;
    * pytest: no plugin autoload (environment), no configuration file (``-c
      /dev/null``, so a planted pytest.ini/tox.ini/pyproject.toml is not read), no
      conftest.py, no cache; the rootdir is the tests' own directory, the module
      outside the agent's tree, so pytest's sys.path insertion adds only that
      directory (a json.py planted in the workdir cannot shadow the stdlib).

    The working directory stays the task's workdir (set by the backend): tests use
    relative paths.
    """
    return [
        VERIFIER_LOADER, "--inhibit-cache", "--library-path", VERIFIER_LIBS,
        VERIFIER_PYTHON, *VERIFIER_PYTHON_OPTIONS, VERIFIER_BOOTSTRAP, *VERIFIER_PYTEST_OPTIONS,
        module_path,
    ]  # fmt: skip


def verifier_command_line() -> str:
    """The verifier's exact command line and environment, and the sha256 of its bootstrap, for the record."""
    environment = " ".join(f"{k}={shlex.quote(v)}" for k, v in VERIFIER_ENV.items())
    command = shlex.join(verifier_argv(f"{TESTS_MOUNT}/test_<random>.py"))
    return f"env -i {environment} {command} # {posixpath.basename(VERIFIER_BOOTSTRAP)} sha256:{BOOTSTRAP_SHA256}"


def hidden_test_name() -> str:
    """A module name nobody can predict: 128 random bits."""
    return f"test_{secrets.token_hex(16)}"


class VerifierAuditFailed(SandboxError):
    """The verifier found, before collecting the test, a path or module that is not its runtime's.

    The system under the test is not the one recorded, so the run gives no verdict; the same
    system would fail the same way, so it is not worth another attempt."""


def audited(result: ExecResult) -> ExecResult:
    """A verifier run's result, or VerifierAuditFailed naming what the bootstrap's audit found."""
    if result.exit_code == AUDIT_STATUS:
        for line in result.stderr.splitlines():
            if line.startswith(AUDIT_MARKER):
                raise VerifierAuditFailed(
                    f"the test phase stopped before the test: {line[len(AUDIT_MARKER) :].strip()}"
                )
    return result
