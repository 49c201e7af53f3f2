"""Worker "hosts" on this one machine: each a network namespace of its own with a veth link to the
main namespace, its own host name (a UTS namespace) and its own scratch directory.

PostgreSQL and Redis listen on the main namespace's loopback only; a forwarder (socat) listens on
the main end of each link and passes connections on, so a host reaches them over its link and
never over 127.0.0.1. Cutting the link (taking its main end down) cuts the host off whole."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUBNET = "10.231"  # 10.231.<n>.0/30 per host: .1 the main end, .2 the host's


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


@dataclass
class Host:
    name: str
    number: int
    scratch: Path
    queues: str
    ports: dict[int, int] = field(default_factory=dict)
    forwarders: list[subprocess.Popen] = field(default_factory=list)
    worker: subprocess.Popen | None = None
    starts: int = 0

    @property
    def netns(self) -> str:
        return f"vhf-{self.name}"

    @property
    def main_end(self) -> str:
        return f"vhf{self.number}m"

    @property
    def gateway(self) -> str:
        return f"{SUBNET}.{self.number}.1"

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
        sh("ip", "link", "add", self.main_end, "type", "veth", "peer", "name", "eth0", "netns", self.netns)
        sh("ip", "addr", "add", f"{self.gateway}/30", "dev", self.main_end)
        sh("ip", "link", "set", self.main_end, "up")
        sh("ip", "-n", self.netns, "addr", "add", f"{SUBNET}.{self.number}.2/30", "dev", "eth0")
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
        listed = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True, text=True, check=False)
        return [int(p) for p in listed.stdout.split()]

    def lose(self) -> None:
        """The host is gone at once: every process in it SIGKILLed, its link cut."""
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.cut()
        if self.worker is not None:
            self.worker.wait(timeout=30)

    def stop_worker(self) -> None:
        if self.worker is not None and self.worker.poll() is None:
            os.killpg(self.worker.pid, signal.SIGTERM)
            try:
                self.worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.lose()

    def sandbox_dirs(self) -> set[Path]:
        state = self.tmp / "veriharm-sandboxes"
        return {p for p in state.glob("*") if p.name.startswith(("sbx-", "snap-"))} if state.is_dir() else set()

    def destroy(self) -> None:
        self.stop_worker()
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._unforward()
        subprocess.run(["ip", "link", "del", self.main_end], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True, check=False)
        shutil.rmtree(self.scratch, ignore_errors=True)
