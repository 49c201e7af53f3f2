"""Worker "hosts" on this one machine: each a network namespace of its own with a veth link to the
main namespace, its own host name (a UTS namespace) and its own scratch directory.

PostgreSQL and Redis listen on the main namespace's loopback only; a forwarder (socat) listens on
the main end of each link and passes connections on, so a host reaches them over its link and
never over 127.0.0.1. Cutting the link (taking its main end down) cuts the host off whole.

Namespaces, links and addresses belong to the whole machine, which other test runs share (another
checkout's suite, CI jobs side by side): each run takes a free slot of its own (`free_slot`), and
names and addresses everything after it, so that two runs never take or destroy each other's hosts."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUBNET = "10.231"  # 10.231.<4 x slot + n>.0/30 for host n of a slot: .1 the main end, .2 the host's
SLOTS = 64  # host numbers 1 to 3 of each slot keep the third byte within 4 to 255


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


def free_slot() -> int:
    """A slot no namespace or address on this machine uses yet, searched from one that depends on
    this process, so that runs starting together look at different slots first."""
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    addresses = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True, check=True).stdout
    for step in range(SLOTS):
        slot = (os.getpid() + step) % SLOTS
        if f"vhf{slot}-" not in namespaces and not any(f" {SUBNET}.{4 * slot + n}." in addresses for n in range(1, 4)):
            return slot
    raise RuntimeError(f"all {SLOTS} many-host slots are taken: `ip netns list` shows what holds them")


@dataclass
class Host:
    name: str
    number: int  # 1 to 3
    slot: int
    scratch: Path
    queues: str
    ports: dict[int, int] = field(default_factory=dict)
    forwarders: list[subprocess.Popen] = field(default_factory=list)
    worker: subprocess.Popen | None = None
    starts: int = 0
    # Set once this run made the namespace: never signal or delete one another run made.
    created: bool = False

    @property
    def netns(self) -> str:
        return f"vhf{self.slot}-{self.name}"

    @property
    def main_end(self) -> str:
        return f"vhf{self.slot}-{self.number}m"

    @property
    def _network(self) -> str:
        return f"{SUBNET}.{4 * self.slot + self.number}"

    @property
    def gateway(self) -> str:
        return f"{self._network}.1"

    @property
    def node(self) -> str:
        return f"worker@{self.name}"

    @property
    def tmp(self) -> Path:
        return self.scratch / "tmp"

    def create(self, ports: dict[int, int]) -> None:
        """The namespace, its link, and a forwarder per (port on the link -> port on loopback)."""
        # Sandboxes run as an unprivileged user that must reach their directories from /tmp down.
        self.tmp.mkdir(parents=True, exist_ok=True)
        for directory in (self.scratch, self.tmp):
            directory.chmod(0o755)
        sh("ip", "netns", "add", self.netns)
        self.created = True
        sh("ip", "link", "add", self.main_end, "type", "veth", "peer", "name", "eth0", "netns", self.netns)
        sh("ip", "addr", "add", f"{self.gateway}/30", "dev", self.main_end)
        sh("ip", "link", "set", self.main_end, "up")
        sh("ip", "-n", self.netns, "addr", "add", f"{self._network}.2/30", "dev", "eth0")
        sh("ip", "-n", self.netns, "link", "set", "eth0", "up")
        sh("ip", "-n", self.netns, "link", "set", "lo", "up")
        self.ports = ports
        self._forward()

    def _forward(self) -> None:
        for listen, target in self.ports.items():
            self.forwarders.append(
                subprocess.Popen(
                    [
                        "socat",
                        f"TCP-LISTEN:{listen},bind={self.gateway},fork,reuseaddr",
                        f"TCP:127.0.0.1:{target}",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # with its forked children: one group to end
                )
            )

    def _unforward(self) -> None:
        for forwarder in self.forwarders:
            try:
                os.killpg(forwarder.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            forwarder.wait(timeout=10)
        self.forwarders = []

    def cut(self) -> None:
        """The link goes down. The forwarders' connections end with it, as a server's would once its
        TCP keepalive gives up on a lost peer (docs/deployment.md: the database must not wait hours)."""
        sh("ip", "link", "set", self.main_end, "down")
        self._unforward()

    def restore(self) -> None:
        sh("ip", "link", "set", self.main_end, "up")
        self._forward()

    def start_worker(self, env: dict[str, str], log_dir: Path) -> None:
        self.starts += 1
        command = [
            sys.executable, "-m", "celery", "-A", "veriharm_site", "worker", "--loglevel=INFO",
            "--concurrency=1", "--pool=prefork", "--without-gossip", "--without-mingle",
            "-Q", self.queues, "-n", self.node,
        ]  # fmt: skip
        script = f'hostname {self.name} && exec "$@"'
        self.worker = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "unshare", "--uts", "sh", "-c", script, "sh", *command],
            cwd=REPO,
            env={**env, "TMPDIR": str(self.tmp)},
            stdout=(log_dir / f"{self.name}-{self.starts}.log").open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def pids(self) -> list[int]:
        if not self.created:
            return []
        listed = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True, text=True, check=False)
        return [int(p) for p in listed.stdout.split()]

    def signal_all(self, signum: int) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def freeze(self) -> None:
        """Every process in the host stops where it is (SIGSTOP): what it wrote stays as it is."""
        self.signal_all(signal.SIGSTOP)

    def thaw(self) -> None:
        self.signal_all(signal.SIGCONT)

    def lose(self) -> None:
        """The host is gone at once: every process in it SIGKILLed, its link cut."""
        self.signal_all(signal.SIGKILL)
        self.cut()
        if self.worker is not None:
            self.worker.wait(timeout=30)

    def stop_worker(self) -> None:
        if self.worker is not None and self.worker.poll() is None:
            os.killpg(self.worker.pid, signal.SIGTERM)
            try:
                # Its warm shutdown destroys the sandboxes its pools hold, a build under way included.
                self.worker.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.lose()

    def sandbox_dirs(self) -> set[Path]:
        state = self.tmp / "veriharm-sandboxes"
        return {p for p in state.glob("*") if p.name.startswith(("sbx-", "snap-"))} if state.is_dir() else set()

    def destroy(self) -> None:
        self.stop_worker()
        self._unforward()
        if self.created:
            self.signal_all(signal.SIGKILL)
            subprocess.run(["ip", "link", "del", self.main_end], capture_output=True, check=False)
            subprocess.run(["ip", "netns", "del", self.netns], capture_output=True, check=False)
            self.created = False
        shutil.rmtree(self.scratch, ignore_errors=True)
