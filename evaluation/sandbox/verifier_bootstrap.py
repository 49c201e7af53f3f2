"""The verifier's entry point, inside the runtime: ``python3 -I -S -B <this file> <pytest arguments>``.

The build script copies this file into the verifier runtime (``bootstrap.py`` at its top), so it
runs with the runtime's interpreter and only its standard library. Started with ``-S``, the
interpreter imports no ``site``: no ``sitecustomize``, ``usercustomize`` or ``.pth`` file is
looked for anywhere, and no directory is added by a fixed path (Debian's site.py adds
/usr/local/lib/python3.X/dist-packages whatever the prefix). The module search path is then set
here, to the runtime's own directories, and pytest is started in-process.

Before the test is collected, the search path, every loaded module and every import hook are
checked against the runtime's manifest (``.veriharm-manifest``, every file of the runtime): a
module whose file is not one of the runtime's (a symlink out of it included), a directory on
the path outside the runtime and the tests' directory, or an interpreter that ran ``site`` ends
the run with ``AUDIT_STATUS`` and a line starting with ``AUDIT_MARKER`` on stderr. The sandbox
layer turns that into an infrastructure failure, never a verdict.
"""

from __future__ import annotations

import os
import posixpath
import sys
from types import ModuleType
from typing import Any

# Where the test module lives (evaluation.sandbox.base.TESTS_MOUNT); pytest puts it on the path.
TESTS_DIR = "/.veriharm-tests"
MANIFEST = ".veriharm-manifest"
# Outside pytest's own exit statuses (0-5), the shell's (126-128+N) and timeout(1)'s (124, 137).
AUDIT_STATUS = 70
AUDIT_MARKER = "veriharm-verifier-audit:"
# Modules the interpreter holds without a file of their own.
_FILELESS_ORIGINS = ("built-in", "frozen")


def runtime_path(runtime: str) -> list[str]:
    """The runtime's module search path: its standard library, extension modules and pytest."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return [
        f"{runtime}/usr/lib/{version}",
        f"{runtime}/usr/lib/{version}/lib-dynload",
        f"{runtime}/usr/lib/python3/dist-packages",
    ]


def read_manifest(runtime: str) -> tuple[frozenset[str], frozenset[str], list[str]]:
    """The runtime's regular files and directories, relative to it, and its links leading out.

    The build script writes ``<type> <mode> <path> <link target>`` per entry (then sha256 lines
    and a recipe line, skipped here); a regular file or a directory has an empty link target."""
    files: set[str] = set()
    dirs: set[str] = set()
    outward: list[str] = []
    with open(f"{runtime}/{MANIFEST}", encoding="utf-8", errors="surrogateescape") as manifest:
        for line in manifest:
            kind, _, rest = line.rstrip("\n").partition(" ")
            _mode, _, entry = rest.partition(" ")
            if kind in ("f", "d"):
                (files if kind == "f" else dirs).add(entry[:-1] if entry.endswith(" ") else entry)
            elif kind == "l":
                path, _, target = entry.partition(" ")
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
                if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
                    # Resolved in the sandbox, where the agent may own the target.
                    outward.append(f"runtime link {path} leads out to {target}")
    return frozenset(files), frozenset(dirs), outward


def _in_runtime(path: str, runtime: str, entries: frozenset[str]) -> bool:
    real = os.path.realpath(path)
    prefix = runtime.rstrip("/") + "/"
    return real.startswith(prefix) and real[len(prefix) :] in entries


def _module_problem(name: str, module: ModuleType, runtime: str, files: frozenset[str], dirs: frozenset[str]) -> str:
    spec = getattr(module, "__spec__", None)
    location = getattr(module, "__file__", None) or getattr(spec, "origin", None)
    if location in _FILELESS_ORIGINS or (location is None and name in sys.builtin_module_names):
        return ""
    if isinstance(location, str):
        return "" if _in_runtime(location, runtime, files) else f"module {name} from {location}"
    search = getattr(module, "__path__", None)
    if search is not None:
        # A namespace package: each of its directories must be the runtime's.
        outside = [d for d in list(search) if not _in_runtime(d, runtime, dirs)]
        return f"package {name} searches {', '.join(outside)}" if outside else ""
    # Made by code (typing.io, py's lazy modules...): that code is itself a checked module.
    return ""


def _hook_problem(kind: str, hook: Any) -> str:
    # A class, an instance or a closure: the module defining it, which the module check covers.
    owner = getattr(hook, "__module__", None)
    return "" if owner in sys.modules else f"{kind} {hook!r} from {owner}, not a loaded module"


def audit(runtime: str) -> list[str]:
    """What of the running interpreter is not the runtime's (empty: all of it is)."""
    problems = []
    if not sys.flags.no_site or not sys.flags.isolated:
        problems.append("the interpreter was not started with -I -S")
    allowed = [*runtime_path(runtime), TESTS_DIR]
    problems += [f"sys.path holds {entry!r}" for entry in sys.path if entry not in allowed]
    files, dirs, outward = read_manifest(runtime)
    problems += outward
    for name, module in sorted(sys.modules.items()):
        problem = _module_problem(name, module, runtime, files, dirs)
        if problem:
            problems.append(problem)
    problems += [p for p in (_hook_problem("import finder", f) for f in sys.meta_path) if p]
    problems += [p for p in (_hook_problem("path hook", h) for h in sys.path_hooks) if p]
    return problems


def _stop_if(problems: list[str], stderr: int) -> None:
    if problems:
        message = f"{AUDIT_MARKER} not the verifier runtime's: {'; '.join(problems)}\n"
        os.write(stderr, message.encode("utf-8", "backslashreplace"))
        # Nothing of pytest's shutdown runs: the test must not be collected, let alone run.
        os._exit(AUDIT_STATUS)


def main(arguments: list[str]) -> int:
    runtime = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = runtime_path(runtime)
    # pytest captures fd 2 while collecting: the audit's message goes to the original.
    stderr = os.dup(2)
    import pytest

    _stop_if(audit(runtime), stderr)

    class StartOfRunAudit:
        # After pytest read its options and plugins (-o pythonpath=... included), before collecting.
        @pytest.hookimpl(tryfirst=True)
        def pytest_collection(self, session: Any) -> None:
            _stop_if(audit(runtime), stderr)

    return int(pytest.main(arguments, plugins=[StartOfRunAudit()]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
