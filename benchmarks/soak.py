#!/usr/bin/env python
"""Soak: real workers run 300+ short trials while they are SIGKILLed and PostgreSQL and Redis restart.

Three `celery worker` processes (the shipped command: prefork, --concurrency=2, the shipped
production settings) run reference trials (safe, harmful, no-op on the example candidates, local
backend). During the run a worker is SIGKILLed every ~20 s (its whole process group, the trials it
holds included) and started again; PostgreSQL is restarted (fast shutdown) once a quarter of the
trials are recorded and Redis (no persistence, so every waiting message is lost) once half are;
while each is down, one more worker is SIGKILLed and started again (it must come up without it).
Nothing but the workers' own recovery (lease, heartbeat, recovery sweep) brings the trials back.

Prints, each beside its goal: trials recorded, duplicates (a trial recorded twice, or two trials
for one slot), trials stuck (queued or running when the run ends), the longest time from a SIGKILL
to the recovery of a trial the killed worker held (taken over by another attempt, or finished),
wall time and trials/minute; and what it checked besides (results as expected, reconnection after
each restart, sandboxes left behind). Exit status 1 when a goal is missed.

    python benchmarks/soak.py [--trials 300] [--workers 3] [--concurrency 2] [--kill-every 20]
                              [--deadline 1200] [--logs DIR]

It runs its own PostgreSQL cluster (127.0.0.1:55432, as the `postgres` user) and its own Redis
(127.0.0.1:56379) in a temporary directory and restarts only those; the shared servers at 5432 and
6379 are never touched. Sandboxes live under that directory too (TMPDIR), and the sweep cleans up
only the local backend, so other people's sandboxes and containers are left alone. Everything is
stopped and removed at the end, whatever happened; the trial phase stops at --deadline by itself.
Needs root, bubblewrap and the sandbox tree (scripts/build_sandbox_image.sh; VERIHARM_SANDBOX_ROOT
or --sandbox-root to use an existing one, read-only).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import soak_report  # noqa: E402
from soak_parts import (  # noqa: E402
    FINISHED,
    QUIET_AFTER_RESTART,
    RECOVERY_SLACK,
    Db,
    Kill,
    Restart,
    Worker,
    _abort,
    launch,
    loadavg,
    machine,
    mounts_under,
    sandboxes_in,
)
from soak_services import Postgres, Redis  # noqa: E402

DATABASE = "veriharm_soak"
# The recovery settings, shipped values in veriharm_site/settings/base.py; the soak keeps them
# unless told otherwise (and then says so).
RECOVERY_SETTINGS = {
    "lease": "VERIHARM_TRIAL_LEASE_SECONDS",
    "heartbeat": "VERIHARM_TRIAL_HEARTBEAT_SECONDS",
    "sweep": "VERIHARM_RECOVERY_SWEEP_SECONDS",
    "queued": "VERIHARM_RECOVERY_QUEUED_SECONDS",
}
# Every kill, trial claim and trial end is written to these tables by triggers of the soak's own,
# in the database's clock: the figures come from them, not from polling.
AUDIT_SQL = """
CREATE TABLE soak_claim (id bigserial PRIMARY KEY, trial_id bigint NOT NULL, attempts int NOT NULL,
                         worker text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE soak_finish (id bigserial PRIMARY KEY, trial_id bigint NOT NULL, status text NOT NULL,
                          worker text NOT NULL, attempts int NOT NULL,
                          at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION soak_claim_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO soak_claim (trial_id, attempts, worker) VALUES (NEW.id, NEW.attempts, NEW.worker);
  RETURN NEW;
END $$;
CREATE FUNCTION soak_finish_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO soak_finish (trial_id, status, worker, attempts) VALUES (NEW.id, NEW.status, NEW.worker, NEW.attempts);
  RETURN NEW;
END $$;
CREATE TRIGGER soak_claim_log AFTER UPDATE ON evaluation_trial FOR EACH ROW
  WHEN (NEW.attempts IS DISTINCT FROM OLD.attempts) EXECUTE FUNCTION soak_claim_log();
CREATE TRIGGER soak_finish_log AFTER UPDATE ON evaluation_trial FOR EACH ROW
  WHEN (NEW.status IN ('done', 'unresolved', 'cancelled')
        AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.finished_at IS DISTINCT FROM NEW.finished_at))
  EXECUTE FUNCTION soak_finish_log();
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300, help="at least this many trials (whole repetitions)")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2, help="pool processes per worker (shipped: 2)")
    parser.add_argument("--kill-every", type=float, default=20.0, help="seconds between two SIGKILLs (+-20%%)")
    parser.add_argument("--postgres-at", type=float, default=0.25, help="restart PostgreSQL at this share recorded")
    parser.add_argument("--redis-at", type=float, default=0.5, help="restart Redis at this share recorded")
    parser.add_argument("--down", type=float, default=5.0, help="seconds each server stays down")
    parser.add_argument("--deadline", type=float, default=1200.0, help="hard limit of the trial phase, seconds")
    parser.add_argument("--pg-port", type=int, default=55432)
    parser.add_argument("--redis-port", type=int, default=56379)
    parser.add_argument(
        "--sandbox-root",
        default=os.environ.get("VERIHARM_SANDBOX_ROOT", ""),
        help="the sandbox tree, used read-only (default: VERIHARM_SANDBOX_ROOT or .cache/sandbox-root)",
    )
    parser.add_argument("--logs", help="copy the worker, PostgreSQL and Redis logs to this directory at the end")
    parser.add_argument("--seed", type=int, default=1)
    for key, name in RECOVERY_SETTINGS.items():
        parser.add_argument(f"--{key}", type=float, help=f"override {name} (shipped value otherwise)")
    return parser.parse_args()


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.root = Path(tempfile.mkdtemp(prefix="veriharm-soak-"))
        os.chmod(self.root, 0o755)
        self.tmp = self.root / "tmp"
        self.tmp.mkdir()
        os.chmod(self.tmp, 0o1777)
        self.logs = self.root / "logs"
        self.logs.mkdir()
        self.postgres = Postgres(self.root, args.pg_port)
        self.redis = Redis(self.root, args.redis_port)
        self.workers: list[Worker] = []
        self.kills: list[Kill] = []
        self.restarts: list[Restart] = []
        self.unexpected_exits: list[str] = []
        self.load_samples: list[float] = []
        self.runs: list[int] = []
        self.total = 0
        self.t0 = 0.0
        self.t_end = 0.0
        self.timed_out = False
        self.orphans_at_end: int | None = None
        self.removed_at_teardown = 0
        self.load_before = loadavg()

    # -- set-up ----------------------------------------------------------------------------------
    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in RECOVERY_SETTINGS.values()}
        for key, name in RECOVERY_SETTINGS.items():
            value = getattr(self.args, key)
            if value is not None:
                env[name] = str(int(value) if key == "lease" else value)
        sandbox_root = self.args.sandbox_root or str(REPO / ".cache" / "sandbox-root")
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "veriharm_site.settings.production",
                "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
                "DATABASE_URL": self.postgres.url(DATABASE),
                "CELERY_BROKER_URL": self.redis.url,
                "VERIHARM_VAR_DIR": str(self.root / "var"),
                "VERIHARM_SANDBOX_BACKEND": "local",
                # Never the docker backend's orphans: other people's containers run on this engine.
                "VERIHARM_SANDBOX_CLEANUP_BACKENDS": "local",
                "VERIHARM_SANDBOX_ROOT": sandbox_root,
                # The sandboxes' state (tmpfs mounts, records) and the gateways' sockets live here.
                "TMPDIR": str(self.tmp),
                "PYTHONPATH": str(REPO),
                "DJANGO_LOG_LEVEL": "INFO",
            }
        )
        return env

    def set_up(self) -> None:
        self.postgres.init()
        self.postgres.start()
        self.postgres.create_database(DATABASE)
        self.redis.start()
        env = self.environment()
        os.environ.update(env)
        os.environ["DJANGO_LOG_LEVEL"] = "WARNING"
        tempfile.tempdir = None  # TMPDIR changed: the sandbox state dir is the soak's own
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command

        from evaluation.sandbox.images import root_is_complete, verifier_is_complete

        if not root_is_complete() or not verifier_is_complete():
            raise SystemExit(
                f"the sandbox tree or its verifier runtime at {env['VERIHARM_SANDBOX_ROOT']} is incomplete; "
                "build it with scripts/build_sandbox_image.sh"
            )
        call_command("migrate", verbosity=0)
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(AUDIT_SQL)
        self.settings = settings
        self.db = Db()
        from veriharm_site.celery import app  # the project's app: tasks are published to the soak's Redis

        self.app = app
        self.workers = [Worker(slot, env, self.logs, self.args.concurrency) for slot in range(1, self.args.workers + 1)]

    def print_header(self) -> None:
        s = self.settings
        print(
            f"soak: {self.args.workers} workers x --concurrency={self.args.concurrency} (prefork), local backend, "
            f"production settings; PostgreSQL at 127.0.0.1:{self.args.pg_port} ({self.postgres.version}), "
            f"Redis at 127.0.0.1:{self.args.redis_port}, both private, in {self.root}"
        )
        notes = []
        for key, name in RECOVERY_SETTINGS.items():
            value = getattr(s, name)
            given = getattr(self.args, key)
            notes.append(f"{name}={value:g} ({'SHORTENED by --' + key if given is not None else 'shipped'})")
        notes.append(f"visibility_timeout={s.CELERY_BROKER_TRANSPORT_OPTIONS.get('visibility_timeout')} (shipped)")
        print("settings: " + ", ".join(notes))
        print(f"machine: {machine()}, load average {self.load_before:.2f} at the start")
        sys.stdout.flush()

    def wait_for_workers(self, names: list[str], timeout: float = 90) -> dict[str, float]:
        """Which of `names` answer a broadcast ping, and after how many seconds (from now)."""
        started = time.time()
        answered: dict[str, float] = {}
        while time.time() - started < timeout and len(answered) < len(names):
            try:
                replies = self.app.control.ping(timeout=2.0)
            except Exception:  # the broker is still coming back
                replies = []
                time.sleep(1)
            for reply in replies:
                for host in reply:
                    if host in names and host not in answered:
                        answered[host] = time.time() - started
        return answered

    # -- the run ---------------------------------------------------------------------------------
    def counts(self) -> Counter | None:
        rows = self.db.query(
            "SELECT status, count(*) FROM evaluation_trial WHERE run_id = ANY(%s) GROUP BY status", [self.runs]
        )
        return None if rows is None else Counter(dict(rows))

    def held_by(self) -> dict[str, dict[int, int]] | None:
        rows = self.db.query("SELECT worker, id, attempts FROM evaluation_trial WHERE status = 'running'")
        if rows is None:
            return None
        held: dict[str, dict[int, int]] = defaultdict(dict)
        for worker, pk, attempts in rows:
            held[worker][pk] = attempts
        return held

    def kill_one(self, turn: int) -> bool:
        held = self.held_by()
        if held is None:
            return False  # the database is down: kill once it answers, so the kill is measured
        order = [self.workers[(turn + i) % len(self.workers)] for i in range(len(self.workers))]
        victim = next((w for w in order if held.get(w.hostname)), order[0])
        name = victim.hostname
        at = victim.kill()
        self.kills.append(Kill(at, name, dict(held.get(name, {}))))
        print(f"  {at - self.t0:6.1f}s  SIGKILL {name} holding trial(s) {sorted(held.get(name, {})) or 'none'}")
        victim.start()
        return True

    def restart(self, service: str, turn: int) -> None:
        """Stop `service`, and while it is down SIGKILL a worker and start it again (a new worker
        must come up without its database or broker); then start the service again."""
        held = self.held_by() or {}
        order = [self.workers[(turn + i) % len(self.workers)] for i in range(len(self.workers))]
        victim = next((w for w in order if held.get(w.hostname)), order[0])
        survivors = [w.hostname for w in self.workers if w.alive() and w is not victim]
        lost = None
        began = time.time()
        if service == "postgres":
            self.postgres.stop()
        else:
            # Every queue the workers consume (trials go to their backend's queue, sandbox-local).
            lengths = [self.redis.queue_length(q.name) for q in self.settings.CELERY_TASK_QUEUES]
            lost = sum(n for n in lengths if n is not None)
            self.redis.stop()
        name = victim.hostname
        at = victim.kill()
        self.kills.append(Kill(at, name, dict(held.get(name, {}))))
        victim.start()
        print(
            f"  {at - self.t0:6.1f}s  {service} down; SIGKILL {name} holding trial(s) "
            f"{sorted(held.get(name, {})) or 'none'}, started again as {victim.hostname} while it is down"
        )
        time.sleep(max(0.0, began + self.args.down - time.time()))
        if service == "postgres":
            self.postgres.start()
        else:
            self.redis.start()
        ended = time.time()
        survivors.append(victim.hostname)
        restart = Restart(service, began, ended, survivors, lost)
        self.restarts.append(restart)
        print(
            f"  {ended - self.t0:6.1f}s  {service} up again (down {ended - began:.1f}s"
            + (f", {lost} waiting message(s) lost" if lost is not None else "")
            + ")"
        )
        if service == "redis":
            # The survivors' consumers must come back to the new server: they answer a broadcast.
            restart.answered = self.wait_for_workers(survivors, timeout=QUIET_AFTER_RESTART)
            print(f"           workers answering after the restart: {len(restart.answered)}/{len(survivors)}")
        sys.stdout.flush()

    def run(self) -> None:
        for worker in self.workers:
            worker.start()
        ready = self.wait_for_workers([w.hostname for w in self.workers])
        if len(ready) < len(self.workers):
            raise RuntimeError(f"only {len(ready)} of {len(self.workers)} workers came up; see {self.logs}")
        self.runs, self.total = launch(self.args.trials)
        self.t0 = time.time()
        deadline = self.t0 + self.args.deadline
        print(
            f"launched {self.total} trials; kills every ~{self.args.kill_every:g}s; PostgreSQL restart at "
            f"{self.args.postgres_at:.0%} recorded, Redis restart at {self.args.redis_at:.0%}; "
            f"deadline {self.args.deadline:.0f}s"
        )
        sys.stdout.flush()
        next_kill = self.t0 + self.args.kill_every
        next_sample = self.t0
        quiet_until = 0.0
        turn = 0
        pending = {"postgres": self.args.postgres_at, "redis": self.args.redis_at}
        while True:
            now = time.time()
            if now >= deadline:
                self.timed_out = True
                break
            if now >= next_sample:
                self.load_samples.append(loadavg())
                next_sample = now + 10
            for worker in self.workers:
                if not worker.alive():
                    code = worker.process.returncode
                    self.unexpected_exits.append(f"{worker.hostname} exited with {code}")
                    print(f"  {now - self.t0:6.1f}s  {worker.hostname} EXITED by itself ({code}); starting it again")
                    worker.start()
            counts = self.counts()
            if counts is not None:
                finished = sum(counts[s] for s in FINISHED)
                due = [s for s, share in pending.items() if finished >= share * self.total and now >= quiet_until]
                if due:
                    self.restart(due[0], turn)
                    turn += 1
                    del pending[due[0]]
                    quiet_until = time.time() + QUIET_AFTER_RESTART
                    next_kill = max(next_kill, quiet_until)
                    continue
                if finished >= self.total and not pending:
                    break
            if now >= next_kill and now >= quiet_until and self.kill_one(turn):
                turn += 1
                next_kill = time.time() + self.args.kill_every * self.rng.uniform(0.8, 1.2)
            time.sleep(0.5)
        self.t_end = time.time()
        counts = self.counts() or Counter()
        # The worker started after the last kill removes that kill's sandboxes in its first sweep:
        # give it that long, then count what no sweep removed.
        last_kill = max((k.at for k in self.kills), default=0.0)
        give_up_at = last_kill + self.settings.VERIHARM_RECOVERY_SWEEP_SECONDS + RECOVERY_SLACK
        self.orphans_at_end = self.orphans()
        while self.orphans_at_end and time.time() < give_up_at:
            time.sleep(1)
            self.orphans_at_end = self.orphans()
        print(
            f"  {self.t_end - self.t0:6.1f}s  end of the trial phase: "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            + (" (DEADLINE)" if self.timed_out else "")
        )
        sys.stdout.flush()

    def orphans(self) -> int:
        """Sandboxes in the soak's state directory whose owning process is dead."""
        import json

        from evaluation.sandbox.bubblewrap.host import owner_alive  # the backend's own liveness test

        orphans = 0
        for directory in sandboxes_in(self.tmp / "veriharm-sandboxes"):
            try:
                meta = json.loads((directory / "meta.json").read_text())
                orphans += not owner_alive(int(meta["owner_pid"]), meta.get("owner_start"))
            except (OSError, ValueError, KeyError):
                orphans += 1
        return orphans

    # -- figures ---------------------------------------------------------------------------------
    def report(self) -> bool:
        return soak_report.report(self)

    def wall_goal(self) -> float:
        """Minutes: the trials undisturbed (~1 min per 100 on this machine), what recovery waits by
        design (the messages Redis lost come back once queued past the threshold, plus a sweep;
        a trial held at the last kill comes back after its lease, plus a sweep), and 2 minutes."""
        s = self.settings
        waits = s.VERIHARM_RECOVERY_QUEUED_SECONDS + s.VERIHARM_RECOVERY_SWEEP_SECONDS
        waits += s.VERIHARM_TRIAL_LEASE_SECONDS + s.VERIHARM_RECOVERY_SWEEP_SECONDS
        return math.ceil(self.total / 100 + waits / 60 + 2)

    # -- tear-down -------------------------------------------------------------------------------
    def tear_down(self) -> None:
        for worker in self.workers:
            try:
                worker.stop()
            except Exception as exc:  # keep tearing down
                print(f"could not stop {worker.hostname}: {exc}")
        try:
            from evaluation.sandbox.registry import get_backend

            self.removed_at_teardown = get_backend("local").cleanup_orphans()
            if self.removed_at_teardown:
                print(f"removed {self.removed_at_teardown} sandbox(es) at the tear-down")
        except Exception as exc:
            print(f"could not clean up the soak's sandboxes: {exc}")
        try:
            from django.db import connections

            connections.close_all()
        except Exception:
            pass
        self.redis.stop()
        self.postgres.stop()
        if self.args.logs:
            target = Path(self.args.logs)
            target.mkdir(parents=True, exist_ok=True)
            for log in [*self.logs.glob("*.log"), self.postgres.log, self.redis.log]:
                if log.exists():
                    shutil.copy(log, target / log.name)
            print(f"logs copied to {target}")
        for point in mounts_under(self.root):
            subprocess.run(["umount", "-l", point], check=False, capture_output=True)
        left = mounts_under(self.root)
        if left:
            print(f"NOT removing {self.root}: mounts remain under it: {left}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)


def main() -> None:
    args = parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    if os.geteuid() != 0:
        raise SystemExit("the soak needs root (the local sandbox backend and a cluster run as postgres)")
    soak = Soak(args)
    signal.signal(signal.SIGTERM, _abort)
    signal.signal(signal.SIGALRM, _abort)
    ok = False
    try:
        # Set-up and the trial phase can never outlast the deadline by more than a few minutes.
        signal.alarm(int(args.deadline) + 300)
        soak.set_up()
        soak.print_header()
        soak.run()
        signal.alarm(0)
        ok = soak.report()
    finally:
        signal.alarm(0)
        soak.tear_down()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
