"""Both backends behave the same through the Sandbox interface."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors
import pytest

from evaluation.sandbox import Environment, Limits, Sandbox, SandboxBackend, SandboxError
from evaluation.sandbox.base import WRITABLE_SYSTEM_DIRS, plan_writable_mounts
from evaluation.sandbox.bubblewrap import BubblewrapBackend, LocalSandbox, LocalSnapshot
from evaluation.sandbox.bubblewrap.host import pids_of_uid
from evaluation.sandbox.docker import DockerSandbox, DockerSnapshot
from evaluation.sandbox.images import default_image, sandbox_root

ProcessLister = Callable[[Sandbox], list[str]]


def _exists_on_host(sandbox: Sandbox) -> bool:
    if isinstance(sandbox, LocalSandbox):
        return sandbox.directory.exists()
    assert isinstance(sandbox, DockerSandbox)
    try:
        sandbox.backend.client.containers.get(sandbox.id)
        return True
    except docker.errors.NotFound:
        return False


# --------------------------------------------------------------------------- Environment


def test_environment_from_spec_defaults_and_fields() -> None:
    assert Environment.from_spec(None) == Environment()
    assert Environment.from_spec({}) == Environment()
    env = Environment.from_spec(
        {"workdir": "/work/./x/", "files": {"a.txt": "1", "/etc/b": "2"}, "setup": "true", "network": False}
    )
    assert env.workdir == "/work/x"
    assert env.resolved_files() == {"/work/x/a.txt": "1", "/etc/b": "2"}


@pytest.mark.parametrize(
    "spec",
    [
        {"workdir": "relative"},
        {"files": {"a": 1}},
        {"network": "yes"},
        {"unknown": 1},
        {"setup": ["not", "a", "string"]},
    ],
)
def test_environment_from_spec_refuses_invalid(spec: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Environment.from_spec(spec)


def test_writable_plan() -> None:
    plan = plan_writable_mounts(Environment(workdir="/workspace/repo", files={"/data/x.csv": "1"}))
    assert set(plan) == set(WRITABLE_SYSTEM_DIRS) | {"/workspace", "/data"}
    assert plan.index("/usr/local") > plan.index("/etc")  # parents before nested mounts
    assert "/app" not in plan_writable_mounts(Environment(workdir="/root/project"))
    with pytest.raises(SandboxError, match="read-only system"):
        plan_writable_mounts(Environment(workdir="/usr/src/app"))
    with pytest.raises(SandboxError, match="read-only system"):
        plan_writable_mounts(Environment(files={"/usr/bin/evil": "x"}))


# --------------------------------------------------------------------------- create / exec


def test_files_and_setup_are_applied_in_workdir(backend: SandboxBackend, sandboxes: list[Sandbox]) -> None:
    env = Environment(
        workdir="/workspace/project",
        files={
            "data.txt": "hello\n",
            "nested/dir/config.ini": "[a]\nb = 1\n",
            "/etc/app.conf": "mode=strict\n",
            "/data/input.csv": "x,y\n",
        },
        setup="pwd > where.txt && cat data.txt nested/dir/config.ini > combined.txt && echo ok >> /etc/app.conf",
    )
    sandbox = backend.create(env)
    sandboxes.append(sandbox)
    assert sandbox.workdir == "/workspace/project"
    result = sandbox.exec("pwd; cat where.txt; cat combined.txt; cat /etc/app.conf /data/input.csv", 30)
    assert result.exit_code == 0, result
    assert result.stdout == "/workspace/project\n/workspace/project\nhello\n[a]\nb = 1\nmode=strict\nok\nx,y\n"
    # The image's own content is still there under the writable directories.
    check = sandbox.exec("grep -q '^root:' /etc/passwd && test -f /root/.bashrc && python3 -c 'import pytest'", 30)
    assert check.exit_code == 0, check


def test_exec_reports_exit_codes_streams_env_and_cwd(backend: SandboxBackend, sandboxes: list[Sandbox]) -> None:
    sandbox = backend.create(Environment(files={"sub/marker": "m"}))
    sandboxes.append(sandbox)
    result = sandbox.exec("echo out; echo err >&2; printf 'é✓'; exit 7", 30)
    assert (result.exit_code, result.stdout, result.stderr, result.timed_out) == (7, "out\né✓", "err\n", False)
    assert result.duration > 0
    assert sandbox.exec("true", 30).exit_code == 0
    assert sandbox.exec('echo "$GREETING $HOME"', 30, env={"GREETING": "hi"}).stdout == "hi /root\n"
    assert sandbox.exec("pwd; ls", 30, cwd="sub").stdout == "/app/sub\nmarker\n"
    assert sandbox.exec("pwd", 30, cwd="/tmp").stdout == "/tmp\n"
    assert sandbox.exec("id -u", 30).stdout == "0\n"
    # A command killed by a signal reports it the shell way.
    assert sandbox.exec("kill -KILL $$", 30).exit_code == 137


def test_timeout_kills_command_and_its_children(
    backend: SandboxBackend, sandboxes: list[Sandbox], processes_in: ProcessLister
) -> None:
    sandbox = backend.create(Environment())
    sandboxes.append(sandbox)
    started = time.monotonic()
    result = sandbox.exec("sleep 1234 & echo started; sleep 600", 1.5)
    elapsed = time.monotonic() - started
    assert result.timed_out and result.exit_code is None
    assert "started" in result.stdout
    assert 1.4 <= elapsed < 10
    assert processes_in(sandbox) == []
    after = sandbox.exec("ps -eo args | grep -c '[s]leep 1234' || true", 30)
    assert after.stdout.strip() == "0"


def test_write_and_read_files(backend: SandboxBackend, sandboxes: list[Sandbox]) -> None:
    sandbox = backend.create(Environment())
    sandboxes.append(sandbox)
    sandbox.write_file("notes/readme.txt", "text ✓\n")
    sandbox.write_file("/tmp/blob.bin", bytes(range(256)), mode=0o600)
    sandbox.write_file("run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
    assert sandbox.read_file("notes/readme.txt") == "text ✓\n".encode()
    assert sandbox.read_file("/app/notes/readme.txt") == "text ✓\n".encode()
    assert sandbox.read_file("/tmp/blob.bin") == bytes(range(256))
    assert sandbox.exec("stat -c %a /tmp/blob.bin run.sh; ./run.sh", 30).stdout == "600\n755\nran\n"
    sandbox.write_file("notes/readme.txt", b"replaced")
    assert sandbox.read_file("notes/readme.txt") == b"replaced"
    with pytest.raises(FileNotFoundError):
        sandbox.read_file("missing.txt")
    # Written by a command, read back by the API and the other way round.
    sandbox.exec("head -c 3000000 /dev/urandom > big.bin", 30)
    big = sandbox.read_file("big.bin")
    assert len(big) == 3_000_000
    sandbox.write_file("copy.bin", big)
    assert sandbox.exec("cmp big.bin copy.bin && echo same", 30).stdout == "same\n"


def test_snapshot_restores_are_independent(backend: SandboxBackend, sandboxes: list[Sandbox]) -> None:
    original = backend.create(Environment(files={"state.txt": "v1\n", "/etc/app.conf": "c1\n"}))
    sandboxes.append(original)
    original.exec("echo tmp > /tmp/t; rm /etc/app.conf; mkdir -p deep/dir && echo x > deep/dir/f", 30)
    snapshot = original.snapshot()
    try:
        original.exec("echo original-after > state.txt", 30)
        first, second = snapshot.restore(), snapshot.restore()
        sandboxes += [first, second]
    finally:
        snapshot.discard()
    # Restores are usable after the snapshot is gone, and start from its state.
    for copy in (first, second):
        state = copy.exec("cat state.txt /tmp/t deep/dir/f; test -e /etc/app.conf && echo back || echo gone", 30)
        assert state.stdout == "v1\ntmp\nx\ngone\n", state
        assert copy.workdir == "/app"
    first.exec("echo first > state.txt; touch only-in-first; echo c2 > /etc/app.conf", 30)
    assert second.read_file("state.txt") == b"v1\n"
    assert second.exec("test -e only-in-first", 30).exit_code != 0
    assert second.exec("test -e /etc/app.conf", 30).exit_code != 0
    assert original.exec("cat state.txt; test -e only-in-first || echo absent", 30).stdout == "original-after\nabsent\n"
    assert first.read_file("state.txt") == b"first\n"


def test_destroy_is_idempotent_and_leaves_nothing(backend: SandboxBackend) -> None:
    sandbox = backend.create(Environment(files={"a": "b"}))
    snapshot = sandbox.snapshot()
    copy = snapshot.restore()
    assert _exists_on_host(sandbox) and _exists_on_host(copy)
    if isinstance(snapshot, LocalSnapshot):
        storage = snapshot.directory
    else:
        assert isinstance(snapshot, DockerSnapshot)
        storage = snapshot.path
    assert storage.exists()
    for _ in range(2):
        snapshot.discard()
        sandbox.destroy()
        copy.destroy()
    assert not storage.exists()
    assert not _exists_on_host(sandbox) and not _exists_on_host(copy)
    if isinstance(sandbox, LocalSandbox):
        assert str(sandbox.rw) not in Path("/proc/self/mountinfo").read_text()
        assert all(not Path(d).exists() for d in sandbox.cgroups.dirs.values())
    with pytest.raises(SandboxError):
        sandbox.exec("true", 5)
    with pytest.raises(SandboxError):
        snapshot.restore()
    # The context manager form destroys too.
    with backend.create(Environment()) as scoped:
        assert scoped.exec("true", 30).exit_code == 0
    assert not _exists_on_host(scoped)


_CRASHING_OWNER = """
import json, sys
from evaluation.sandbox import Environment
from evaluation.sandbox.registry import get_backend
backend = get_backend({name!r})
sandbox = backend.create(Environment(files={{"f": "x"}}))
snapshot = sandbox.snapshot()
where = str(sandbox.directory) if {name!r} == "local" else sandbox.id
print(json.dumps({{"where": where}}), flush=True)
sandbox.exec("sleep 600", 600)   # killed while this runs
"""


def test_cleanup_orphans_removes_what_a_crashed_process_left(
    backend: SandboxBackend, python_process: Callable[[str], subprocess.Popen[str]]
) -> None:
    owner = python_process(_CRASHING_OWNER.format(name=backend.name))
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line, owner.stderr.read() if owner.stderr else "no output"
        where = json.loads(line)["where"]
        time.sleep(0.5)  # let the exec start
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
    if backend.name == "local":
        assert Path(where).exists()
        record = json.loads((Path(where) / "meta.json").read_text())
        assert record["owner_pid"] == owner.pid
    else:
        assert backend.client.containers.get(where).status == "running"  # type: ignore[attr-defined]
    assert backend.cleanup_orphans() >= 1
    if backend.name == "local":
        assert not Path(where).exists()
        assert where not in Path("/proc/self/mountinfo").read_text()
        assert all(not Path(d).exists() for d in record["cgroups"].values())
        assert pids_of_uid(record["uid"]) == []
    else:
        with pytest.raises(docker.errors.NotFound):
            backend.client.containers.get(where)  # type: ignore[attr-defined]
    # Our own live sandboxes are not orphans.
    with backend.create(Environment()) as mine:
        backend.cleanup_orphans()
        assert mine.exec("true", 30).exit_code == 0


def test_setup_failure_raises_with_output_and_cleans_up(backend: SandboxBackend) -> None:
    before = _settled_count(backend)
    with pytest.raises(SandboxError) as failure:
        backend.create(Environment(setup="echo building; echo 'missing dependency' >&2; exit 3"))
    message = str(failure.value)
    assert "exited 3" in message and "building" in message and "missing dependency" in message
    # A pooled backend tries the environment once more in the background, then leaves it be
    # (its test-phase spares, which run no setup, are ready).
    assert _settled_count(backend) == before


def test_setup_timeout_is_a_sandbox_error(backend: SandboxBackend) -> None:
    original = backend.setup_timeout  # type: ignore[attr-defined]
    backend.setup_timeout = 1.0  # type: ignore[attr-defined]
    try:
        with pytest.raises(SandboxError, match="timed out"):
            backend.create(Environment(setup="sleep 100"))
    finally:
        backend.setup_timeout = original  # type: ignore[attr-defined]


def test_limits_are_applied(backend: SandboxBackend, sandboxes: list[Sandbox]) -> None:
    sandbox = backend.create(Environment(), Limits(memory_mb=128, pids=32, disk_mb=16, cpus=0.5))
    sandboxes.append(sandbox)
    memory = sandbox.exec("python3 -c 'b = bytearray(300 * 1024 * 1024); print(len(b))'", 60)
    assert memory.exit_code != 0 and "314572800" not in memory.stdout, memory
    # The writable area holding /app is capped: all of disk_mb (local) or its share (docker).
    app_mb = int(sandbox.exec("df -m /app | awk 'NR==2 {print $2}'", 30).stdout)
    assert (app_mb == 16) if backend.name == "local" else (8 <= app_mb <= 10)
    # Still usable after the memory limit killed a process.
    assert sandbox.exec("echo alive", 30).stdout == "alive\n"


def test_the_hosts_network_is_never_shared(backend: SandboxBackend, sandboxes: list[Sandbox]) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        port = server.getsockname()[1]
        probe = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=3)'"
        isolated = backend.create(Environment())
        sandboxes.append(isolated)
        assert isolated.exec(probe, 30).exit_code != 0
        # Asking for network is refused by name, never quietly granted nor quietly dropped.
        with pytest.raises(ValueError, match="environment.network is true, but sandboxes never share the host"):
            Environment(network=True)
        with pytest.raises(ValueError, match="never share the host's network"):
            Environment.from_spec({"network": True})
    finally:
        server.close()


def test_environment_image(backend: SandboxBackend, sandboxes: list[Sandbox]) -> None:
    if backend.name == "local":
        with pytest.raises(SandboxError, match="docker backend"):
            backend.create(Environment(image="python:3.12"))
        sandboxes.append(backend.create(Environment(image=default_image())))
        return
    # A task image with content of its own in the workdir and /etc: both must be seen.
    client = backend.client  # type: ignore[attr-defined]
    builder = client.containers.run(
        default_image(),
        ["sh", "-c", "mkdir -p /app/src && echo prebuilt > /app/src/lib.txt && echo 1 > /etc/task-image"],
        detach=True,
        network_mode="none",
    )
    builder.wait()
    tag = f"veriharm-sandbox-test:{os.getpid()}"
    builder.commit(repository=tag.split(":")[0], tag=tag.split(":")[1])
    builder.remove()
    try:
        sandbox = backend.create(Environment(image=tag, files={"main.txt": "m"}))
        sandboxes.append(sandbox)
        result = sandbox.exec("cat src/lib.txt main.txt /etc/task-image", 30)
        assert result.stdout == "prebuilt\nm1\n", result
        with pytest.raises(SandboxError, match="not found"):
            backend.create(Environment(image="veriharm-no-such-image:latest"))
    finally:
        for sandbox in sandboxes:
            sandbox.destroy()
        client.images.remove(tag, force=True)


def test_local_root_tree_behind_a_private_directory(sandbox_base: None) -> None:
    """A checkout under a 0700 directory: the unprivileged sandbox uids cannot traverse to the tree."""
    private = Path(tempfile.mkdtemp(prefix="veriharm-private-"))
    assert private.stat().st_mode & 0o777 == 0o700
    hidden_root = private / "root"
    hidden_root.mkdir()
    state = Path(tempfile.mkdtemp(prefix="veriharm-state-"))
    subprocess.run(["mount", "--bind", "-o", "ro", str(sandbox_root()), str(hidden_root)], check=True)
    try:
        backend = BubblewrapBackend(root=hidden_root, state_dir=state)
        with backend.create(Environment(files={"a": "b"})) as sandbox:
            assert sandbox.exec("cat a /etc/hostname", 30).stdout == "bsandbox\n"
            snapshot = sandbox.snapshot()
            with snapshot.restore() as copy:
                assert copy.exec("cat a", 30).stdout == "b"
            snapshot.discard()
        binds = list(state.glob("root-*"))
        assert len(binds) == 1 and str(binds[0]) in Path("/proc/self/mountinfo").read_text()
        assert backend.cleanup_orphans() == 0  # and the bind mount is left alone
        assert binds[0].joinpath("etc", "hostname").exists()
    finally:
        for mount in [*state.glob("root-*"), hidden_root]:
            subprocess.run(["umount", str(mount)], check=False)
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)


def _settled_count(backend: SandboxBackend) -> int:
    """_count_own besides the spares a pooled backend keeps ready, once its refills have settled
    (at once without pools)."""
    assert backend.wait_pools_idle(120), "the warm pools did not settle"  # type: ignore[attr-defined]
    return _count_own(backend) - len(backend.pooled())  # type: ignore[attr-defined]


def _count_own(backend: SandboxBackend) -> int:
    """Sandboxes (and snapshots) of this process that exist on the host."""
    if backend.name == "local":
        state: Path = backend.state_dir  # type: ignore[attr-defined]
        owned = 0
        for meta in state.glob("*/meta.json") if state.exists() else []:
            owned += json.loads(meta.read_text()).get("owner_pid") == os.getpid()
        return owned
    containers = backend.client.containers.list(  # type: ignore[attr-defined]
        all=True, filters={"label": [f"veriharm.owner_pid={os.getpid()}"]}
    )
    return len(containers)
