"""Attempts to get out, made by commands inside the sandbox, as an agent would.

Each test checks both that the attempt failed (or was cut off) inside and that the
host is unchanged, judged from the host side.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evaluation.sandbox import Environment, Limits, Sandbox, SandboxBackend

REPO = Path(__file__).resolve().parents[3]
ProcessLister = Callable[[Sandbox], list[str]]


@pytest.fixture
def host_dir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="veriharm-host-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def sandbox(backend: SandboxBackend, sandboxes: list[Sandbox]) -> Sandbox:
    created = backend.create(Environment(files={"task.txt": "do the task\n"}))
    sandboxes.append(created)
    return created


def test_cannot_write_outside(sandbox: Sandbox, host_dir: Path) -> None:
    marker = host_dir / "marker.txt"
    marker.write_text("original\n")
    host_etc = Path("/etc") / f"veriharm-escape-{secrets.token_hex(4)}"
    host_repo = REPO / f"veriharm-escape-{secrets.token_hex(4)}"
    command = (
        f"echo pwned > {marker}; echo pwned >> {marker}; rm -f {marker}; "
        f"echo pwned > {host_etc}; echo pwned > {host_repo}; "
        f"mkdir -p {host_dir}/sub && echo pwned > {host_dir}/sub/new; "
        "echo pwned > /usr/bin/pwned; echo pwned > /pwned; "
        "mount -t tmpfs none /mnt 2>&1; echo done"
    )
    result = sandbox.exec(command, 30)
    assert "done" in result.stdout
    # The sandbox's own /etc is writable (a task may configure things), the host's is not touched.
    assert sandbox.exec(f"cat {host_etc}", 30).stdout == "pwned\n"
    assert marker.read_text() == "original\n"
    assert sorted(p.name for p in host_dir.iterdir()) == ["marker.txt"]
    assert not host_etc.exists() and not host_repo.exists()
    assert not Path("/usr/bin/pwned").exists() and not Path("/pwned").exists()
    # The OS part of the sandbox is read-only inside too.
    assert sandbox.exec("test -e /usr/bin/pwned || test -e /pwned", 30).exit_code != 0


def test_cannot_read_host_files(sandbox: Sandbox, host_dir: Path) -> None:
    secret = secrets.token_hex(16)
    (host_dir / "secret.txt").write_text(secret)
    root_secret = Path(tempfile.mkdtemp(prefix="veriharm-secret-", dir="/root"))
    try:
        (root_secret / "key").write_text(secret)
        settings = REPO / "veriharm_site" / "settings"
        targets = [host_dir / "secret.txt", root_secret / "key", REPO / "veriharm_site" / "settings.py", settings]
        probes = "; ".join(f"cat {t} 2>/dev/null; ls {t} 2>/dev/null" for t in targets)
        result = sandbox.exec(
            f"{probes}; ls -A /root; "
            f"grep -rsl {secret} / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; "
            "ls /work 2>/dev/null; echo end",
            120,
        )
        assert result.stdout.endswith("end\n")
        assert secret not in result.stdout and secret not in result.stderr
        assert root_secret.name not in result.stdout
        assert "DATABASES" not in result.stdout and "__init__.py" not in result.stdout
        # What /root holds inside is the image's, not the host's.
        host_only = set(os.listdir("/root")) - set(result.stdout.split())
        assert root_secret.name in host_only
    finally:
        shutil.rmtree(root_secret, ignore_errors=True)


class _Listener:
    """A TCP server on the host's loopback that records whether anyone connected."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.server.close()


_CONNECT = """
import socket, sys
reached = []
for port in map(int, sys.argv[1:]):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        reached.append(port)
    except OSError:
        pass
try:
    socket.getaddrinfo("deb.debian.org", 80)
    reached.append("dns")
except OSError:
    pass
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2).close()
    reached.append("internet")
except OSError:
    pass
print("reached", reached)
"""


def test_cannot_reach_the_network(sandbox: Sandbox) -> None:
    listener = _Listener()
    try:
        # A control: the host itself can reach the listener.
        socket.create_connection(("127.0.0.1", listener.port), timeout=2).close()
        deadline = time.monotonic() + 5
        while listener.connections < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listener.connections == 1
        sandbox.write_file("/tmp/connect.py", _CONNECT)
        result = sandbox.exec(f"python3 /tmp/connect.py {listener.port} 5432 6379", 60)
        assert result.stdout == "reached []\n", result
        time.sleep(0.3)
        assert listener.connections == 1
        interfaces = sandbox.exec("ls /sys/class/net 2>/dev/null; cat /proc/net/dev", 30).stdout
        assert "eth0" not in interfaces
    finally:
        listener.close()


_FORKS = """
import errno, os, time
children = 0
failure = "none"
for _ in range(400):
    try:
        pid = os.fork()
    except OSError as exc:
        failure = errno.errorcode.get(exc.errno, str(exc.errno))
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children += 1
print("forked", children, failure)
"""


def test_fork_bomb_is_cut_off(backend: SandboxBackend, sandboxes: list[Sandbox], processes_in: ProcessLister) -> None:
    pids = 48
    sandbox = backend.create(Environment(), Limits(pids=pids))
    sandboxes.append(sandbox)
    # Deterministic part: however many are asked for, forks fail with EAGAIN at the limit.
    sandbox.write_file("/tmp/forks.py", _FORKS)
    counted = sandbox.exec("python3 /tmp/forks.py", 60)
    assert counted.exit_code == 0, counted
    forked = int(counted.stdout.split()[1])
    assert 10 <= forked <= pids, counted
    assert "EAGAIN" in counted.stdout, counted
    # The classic bomb, bounded by the exec timeout; the host must stay responsive meanwhile.
    started = time.monotonic()
    bomb = sandbox.exec(":(){ :|:& };:; sleep 3", 6)
    assert time.monotonic() - started < 20
    assert bomb.timed_out or bomb.exit_code is not None
    host = subprocess.run(["sh", "-c", "echo host-ok"], capture_output=True, text=True, timeout=10)
    assert host.stdout == "host-ok\n"
    assert processes_in(sandbox) == []
    assert sandbox.exec("echo usable", 30).stdout == "usable\n"


def test_cannot_fill_the_disk(backend: SandboxBackend, sandboxes: list[Sandbox]) -> None:
    disk_mb = 24
    sandbox = backend.create(Environment(), Limits(disk_mb=disk_mb, memory_mb=512))
    sandboxes.append(sandbox)
    watched = [Path(tempfile.gettempdir()), Path("/var/lib/docker") if Path("/var/lib/docker").exists() else REPO]
    free_before = [shutil.disk_usage(p).free for p in watched]
    one_file = sandbox.exec("dd if=/dev/zero of=big bs=1M count=200 2>&1; echo rc=$?", 60)
    # ENOSPC from the tmpfs cap, or SIGXFSZ (status 153) from the per-file limit, whichever comes first.
    assert "rc=0" not in one_file.stdout
    assert "No space left" in one_file.stdout or "rc=153" in one_file.stdout, one_file
    many_files = sandbox.exec(
        "rm -f big; for d in /app /tmp /var/tmp /root; do for i in $(seq 1 40); do "
        "head -c 1048576 /dev/zero > $d/f$i 2>/dev/null || break; done; done; "
        "du -smc /app /tmp /var/tmp /root | tail -1",
        120,
    )
    total_mb = int(many_files.stdout.split()[0])
    # 160 MiB were attempted; each writable area stops at its cap.
    assert total_mb <= 4 * disk_mb, many_files
    free_after = [shutil.disk_usage(p).free for p in watched]
    # 360 MiB were attempted in all; a margin for other activity on the machine.
    for before, after in zip(free_before, free_after, strict=True):
        assert before - after < 200 * 1024 * 1024
    assert sandbox.exec("rm -f /app/f* && echo freed", 30).stdout == "freed\n"


def test_full_disk_leaves_the_sandbox_usable(backend: SandboxBackend, sandboxes: list[Sandbox]) -> None:
    # More than memory + disk in total is attempted: the writable area is charged to
    # the memory cgroup, and must neither get the sandbox killed nor wedge it.
    sandbox = backend.create(Environment(), Limits(memory_mb=64, disk_mb=48))
    sandboxes.append(sandbox)
    fill = sandbox.exec(
        "for d in /app /tmp /var /root /opt /etc /home; do head -c 47M /dev/zero > $d/fill 2>/dev/null; done; "
        "echo done",
        60,
    )
    assert fill.stdout == "done\n", fill
    after = sandbox.exec("python3 -c 'print(len(bytearray(32 * 1024 * 1024)))'; rm -f /*/fill; echo cleaned", 60)
    assert after.stdout == "33554432\ncleaned\n", after
    assert sandbox.exec("head -c 8M /dev/zero > /app/again && echo written", 30).stdout == "written\n"


@pytest.mark.parametrize("mode", ["timeout", "returns", "kills-supervisor"])
def test_no_process_outlives_its_exec(sandbox: Sandbox, processes_in: ProcessLister, mode: str) -> None:
    escapes = (
        "sleep 1001 & disown; "
        "nohup sleep 1002 >/dev/null 2>&1 & "
        "setsid sleep 1003 >/dev/null 2>&1 < /dev/null & "
        "(setsid nohup sh -c 'sleep 1004' >/dev/null 2>&1 &); "
        "sh -c 'trap \"\" TERM HUP INT; exec sleep 1005' & "
        "sleep 0.3; echo spawned"
    )
    tails = {
        "timeout": "; sleep 600",
        "returns": "",
        # Kill every process above the command (the backends' own supervisors), then linger.
        "kills-supervisor": "; for p in $(ps -eo pid=,args= | awk '$2 !~ /sleep/ {print $1}'); do "
        "[ $p -ne $$ ] && kill -KILL $p 2>/dev/null; done; sleep 600",
    }
    result = sandbox.exec(escapes + tails[mode], 2)
    assert "spawned" in result.stdout
    assert result.timed_out == (mode == "timeout") or mode == "kills-supervisor"
    assert processes_in(sandbox) == []
    time.sleep(0.5)
    assert processes_in(sandbox) == []
    # Seen from inside as well: only the command itself runs.
    inside = sandbox.exec("ps -eo args | grep -c '[s]leep 100' || true", 30)
    assert inside.stdout.strip() == "0"


TEST_TEMPLATE = """
def test_hidden_{marker}():
    assert open("task.txt").read() == "do the task\\n"
"""


def test_tests_cannot_be_found_before_they_run(sandbox: Sandbox) -> None:
    marker = secrets.token_hex(12)
    search = f"grep -rsl {marker} / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; echo searched"
    # Agent phase, including a watcher left behind to catch the test later.
    watcher = sandbox.exec(
        f"(while :; do grep -rsl {marker} /app /tmp > /tmp/caught 2>/dev/null; sleep 0.2; done) & disown; {search}",
        120,
    )
    assert watcher.stdout == "searched\n", watcher
    snapshot = sandbox.snapshot()
    try:
        copy = snapshot.restore()
    finally:
        snapshot.discard()
    try:
        name = f"test_{secrets.token_hex(8)}.py"
        copy.write_file(name, TEST_TEMPLATE.format(marker=marker))
        run = copy.exec(f"python3 -m pytest -q -p no:cacheprovider {name}", 120)
        assert run.exit_code == 0, run
        # The search does find the test where it exists, so the empty result above means something.
        assert f"/app/{name}\n" in copy.exec(search, 120).stdout
    finally:
        copy.destroy()
    # Nothing of the test ever reached the agent's sandbox.
    assert sandbox.exec(f"{search}; cat /tmp/caught 2>/dev/null", 120).stdout == "searched\n"
