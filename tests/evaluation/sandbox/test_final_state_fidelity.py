"""Each test sees exactly the agent's final state, whatever the agent did to the image's own files.

A docker test container taken from a warm pool already holds the image's content and is sent only
what the agent changed; these agents change the image's files in the ways such a comparison could
miss (same size and restored mtime, a mode or owner alone, a file turned into a symlink or a
directory, removals) and the test compares a full listing of the writable directories, content
hashes included, with the one the agent's own sandbox showed."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator

import pytest

from evaluation.sandbox import Environment, SandboxBackend
from evaluation.sandbox.registry import get_backend

# Prints {path: [kind, mode, uid, gid, mtime (s), size, sha256 or link target]} of every writable
# directory's tree. The files docker bind-mounts from the host are the engine's, not the state's.
LISTING = r"""
import hashlib, json, os, stat
ROOTS = ["/app", "/etc", "/home", "/opt", "/root", "/run", "/srv", "/tmp", "/usr/local", "/var"]
ENGINE = {"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}
def describe(path):
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        detail = os.readlink(path)
    elif stat.S_ISREG(info.st_mode):
        with open(path, "rb") as handle:
            detail = hashlib.sha256(handle.read()).hexdigest()
    else:
        detail = ""
    size = info.st_size if stat.S_ISREG(info.st_mode) else 0
    # pytest's own output capture makes (and unlinks) temporary files in /tmp while the test runs.
    mtime = 0 if path == "/tmp" else int(info.st_mtime)
    return [stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, mtime, size, detail]
def listing():
    found = {}
    for root in ROOTS:
        for directory, dirs, files in os.walk(root):
            found[directory] = describe(directory)
            for name in dirs + files:
                path = os.path.join(directory, name)
                if path not in ENGINE:
                    found[path] = describe(path)
    return found
"""

# Same size and mtime as the image's file, other bytes; a mode alone; a file turned
# into a symlink, another into a directory; a directory turned into a symlink; a symlink retargeted;
# removals, one of them in a directory whose mtime is then put back; a hard link.
AGENT = (
    "set -e; touch -r /etc/issue /tmp/ref; sed -i 's/Debian/DEBIAN/' /etc/issue; touch -r /tmp/ref /etc/issue; "
    "rm /tmp/ref; chmod 600 /etc/login.defs; chmod 700 /var/log; "
    "rm /etc/motd; ln -s /app/motd /etc/motd; rm /etc/issue.net; mkdir /etc/issue.net; echo x > /etc/issue.net/y; "
    "rm -rf /var/cache/debconf; ln -s /tmp /var/cache/debconf; ln -sfn /bin/true /etc/alternatives/awk; "
    "touch -r /etc/apt/apt.conf.d /tmp/ref; rm /etc/debian_version /etc/apt/apt.conf.d/01autoremove; "
    "touch -r /tmp/ref /etc/apt/apt.conf.d; rm /tmp/ref; ln /etc/login.defs /etc/login.defs.again; "
    "echo made > /app/made.txt"
)
# An owner alone (docker: the local backend's sandboxes map only root).
CHOWN = "; chown 1000:1000 /etc/shells"


def _test_module(expected: dict[str, list[object]]) -> str:
    return (
        LISTING
        + f"EXPECTED = json.loads({json.dumps(json.dumps(expected))})\n"
        + "def test_the_state_is_the_agents():\n"
        + "    seen = json.loads(json.dumps(listing()))\n"
        + "    differ = sorted(p for p in set(seen) | set(EXPECTED) if seen.get(p) != EXPECTED.get(p))\n"
        + "    assert differ == [], [(p, EXPECTED.get(p), seen.get(p)) for p in differ[:10]]\n"
        + "    assert os.stat('/etc/login.defs').st_ino == os.stat('/etc/login.defs.again').st_ino\n"
    )


@pytest.fixture(scope="module")
def pooled_docker(sandbox_base: None) -> Iterator[SandboxBackend]:
    """A docker backend whose test containers come from its warm pool (seeded with the image)."""
    backend = get_backend("docker", pool_size=1)
    yield backend
    backend.drain_pools()  # type: ignore[attr-defined]


def _check(backend: SandboxBackend) -> None:
    environment = Environment(workdir="/app")
    if hasattr(backend, "wait_warm"):
        backend.wait_warm(environment, timeout=120)
    sandbox = backend.create(environment)
    try:
        acted = sandbox.exec(AGENT + (CHOWN if backend.name == "docker" else ""), 60)
        assert acted.exit_code == 0, acted.stderr
        shown = sandbox.exec(f"python3 -c {shlex.quote(LISTING + 'print(json.dumps(listing()))')}", 60)
        assert shown.exit_code == 0, shown.stderr
        expected = json.loads(shown.stdout)
        snapshot = sandbox.final_snapshot()
    finally:
        sandbox.destroy()
    # The agent really did what the test relies on (a listing that missed it would prove nothing).
    assert "/etc/debian_version" not in expected and expected["/etc/motd"][6] == "/app/motd"
    assert expected["/etc/login.defs"][1] == 0o600 and expected["/var/cache/debconf"][6] == "/tmp"
    assert expected["/etc/shells"][2] == (1000 if backend.name == "docker" else 0)
    try:
        for _ in range(2):  # both tests of a trial, each on its own copy
            verdict = snapshot.verify(_test_module(expected), 120)
            assert verdict.exit_code == 0, verdict.stdout[-3000:] + verdict.stderr[-2000:]
    finally:
        snapshot.discard()


def test_each_test_sees_the_agents_changes_to_the_image(backend: SandboxBackend) -> None:
    _check(backend)


def test_a_pooled_test_container_sees_them_too(pooled_docker: SandboxBackend) -> None:
    _check(pooled_docker)
