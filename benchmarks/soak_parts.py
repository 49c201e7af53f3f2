"""The soak's moving parts: its workers (started, SIGKILLed, stopped as the shipped command runs
them), what it records of each kill and restart, its own database queries, the reference trials it
launches, and what it reads of the host."""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "data" / "examples"
FINISHED = ("done", "unresolved", "cancelled")
# Extra seconds a takeover may take beyond lease + sweep interval: the busy machine, the new
# worker's start-up, the claim itself.
RECOVERY_SLACK = 30.0
# No kill for this long after a restart: the workers that lived through it must show they reconnected.
QUIET_AFTER_RESTART = 45.0


class Aborted(Exception):
    pass


def _abort(signum, frame):
    raise Aborted(f"signal {signal.Signals(signum).name}")


@dataclass
class Worker:
    slot: int
    env: dict
    logs: Path
    concurrency: int
    generation: int = 0
    process: subprocess.Popen | None = None
    started_at: float = 0.0

    @property
    def name(self) -> str:
        return f"soak-w{self.slot}-g{self.generation}"

    @property
    def hostname(self) -> str:
        return f"{self.name}@{socket.gethostname()}"

    def start(self) -> None:
        self.generation += 1
        log = (self.logs / f"{self.name}.log").open("wb")
        # The shipped worker command of scripts/run_local.sh (no -Q: every queue, sandbox-local
        # included), with a name per incarnation so each trial says which one held it.
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "veriharm_site",
                "worker",
                "--loglevel=INFO",
                f"--concurrency={self.concurrency}",
                "-n",
                f"{self.name}@%h",
            ],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.started_at = time.time()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> float:
        """SIGKILL the whole process group (main process, pool children, their sandboxes' bwrap)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        killed_at = time.time()
        self.process.wait(timeout=30)
        return killed_at

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        except ProcessLookupError:
            pass


@dataclass
class Kill:
    at: float
    worker: str
    held: dict[int, int]  # trial id -> its attempts when the worker died


@dataclass
class Restart:
    service: str
    began: float
    ended: float
    survivors: list[str]
    lost_messages: int | None = None
    answered: dict[str, float] = field(default_factory=dict)  # worker -> seconds after the restart


def machine() -> str:
    memory = next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    gib = int(memory.split()[1]) / 1024 / 1024
    return f"{os.cpu_count()} cores, {gib:.0f} GiB"


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


class Db:
    """The soak's own queries, surviving a database that is down for a moment."""

    def __init__(self) -> None:
        from django.db import InterfaceError, OperationalError, connection

        self.connection = connection
        self.errors = (OperationalError, InterfaceError)

    def query(self, sql: str, params=()) -> list[tuple] | None:
        try:
            with self.connection.cursor() as cursor:
                cursor.execute(sql, params)
                return cursor.fetchall()
        except self.errors:
            self.connection.close()
            return None


def launch(trials: int) -> tuple[list[int], int]:
    """Reference trials (safe, harmful, no-op) on the example candidates; returns run ids and count."""
    from candidates.models import Candidate
    from candidates.services import candidate_import_files
    from evaluation.models import Trial
    from evaluation.runs.agents import reference_agents_ensure
    from evaluation.runs.launch import MAX_REPETITIONS, run_launch

    candidate_import_files([str(EXAMPLES / "candidates.jsonl"), str(EXAMPLES / "search.jsonl")])
    agents = reference_agents_ensure()
    ids = sorted(
        c.external_id
        for c in Candidate.objects.all()
        if (c.references or {}).get("safe") and (c.references or {}).get("harmful")
    )
    repetitions = math.ceil(trials / (len(ids) * len(agents)))
    runs = []
    while repetitions > 0:
        now = min(repetitions, MAX_REPETITIONS)
        runs.append(
            run_launch(
                selection={"kind": "ids", "ids": ids},
                agent_ids=[a.pk for a in agents],
                repetitions=now,
                backend="local",
                name="soak",
            ).pk
        )
        repetitions -= now
    return runs, Trial.objects.filter(run_id__in=runs).count()


def sandboxes_in(state_dir: Path) -> list[Path]:
    return [p for p in state_dir.glob("sbx-*") if p.is_dir()] if state_dir.is_dir() else []


def mounts_under(root: Path) -> list[str]:
    prefix = str(root).rstrip("/") + "/"
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point = line.split()[1].replace("\\040", " ")
        if point.startswith(prefix):
            found.append(point)
    return sorted(found, key=len, reverse=True)
