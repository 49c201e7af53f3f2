"""A private PostgreSQL cluster and Redis server for the soak, on loopback ports of their own.

The soak restarts its database and its broker in the middle of a run, so it must never use the
shared ones at 5432 and 6379 (other people's tests run against them). Both servers here run in the
foreground as children of the soak, in a temporary directory, and die with it: PostgreSQL as the
`postgres` user (it refuses root), from the installed binaries, found the way
scripts/start_services.sh finds them.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1


def _die_with_parent(sig: int, user: str | None = None):
    """A preexec_fn: drop to `user` (if given), then receive `sig` when the soak dies. The death
    signal is set after the credentials change, which would clear it."""
    ids = pwd.getpwnam(user) if user else None

    def setup() -> None:
        if ids is not None:
            os.setgroups([])
            os.setgid(ids.pw_gid)
            os.setuid(ids.pw_uid)
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)

    return setup


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def postgres_bindir() -> Path:
    """The directory of the installed PostgreSQL server binaries (initdb and postgres)."""
    for name in ("initdb", "pg_ctl"):
        found = shutil.which(name)
        if found and (Path(os.path.realpath(found)).parent / "postgres").exists():
            return Path(os.path.realpath(found)).parent
    etc = Path("/etc/postgresql")
    versions = (
        sorted(
            (p.name for p in etc.iterdir()), key=lambda v: [int(x) for x in v.split(".") if x.isdigit()], reverse=True
        )
        if etc.is_dir()
        else []
    )
    versions += sorted((p.name for p in Path("/usr/lib/postgresql").glob("*")), reverse=True)
    for version in versions:
        bindir = Path("/usr/lib/postgresql") / version / "bin"
        if (bindir / "postgres").exists() and (bindir / "initdb").exists():
            return bindir
    raise SystemExit("no PostgreSQL server binaries found (initdb, postgres); install PostgreSQL")


class Postgres:
    """A throwaway cluster in `root`, trust authentication, listening on 127.0.0.1:`port` only."""

    USER = "postgres"

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self.bindir = postgres_bindir()
        self.data = root / "pgdata"
        self.sockets = root / "pgsock"
        self.log = root / "postgres.log"
        self.process: subprocess.Popen | None = None

    @property
    def version(self) -> str:
        return subprocess.run(
            [str(self.bindir / "postgres"), "--version"], capture_output=True, text=True, check=True
        ).stdout.strip()

    def url(self, database: str) -> str:
        return f"postgres://{self.USER}@127.0.0.1:{self.port}/{database}?connect_timeout=5"

    def init(self) -> None:
        if answers(self.port):
            raise SystemExit(f"something already listens on 127.0.0.1:{self.port}; choose another --pg-port")
        ids = pwd.getpwnam(self.USER)
        for directory in (self.data, self.sockets):
            directory.mkdir(mode=0o700)
            os.chown(directory, ids.pw_uid, ids.pw_gid)
        subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                self.USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ],
            check=True,
            capture_output=True,
            preexec_fn=_die_with_parent(signal.SIGKILL, self.USER),
            cwd="/",
        )

    def start(self, timeout: float = 60) -> None:
        log = self.log.open("ab")
        self.process = subprocess.Popen(
            [
                str(self.bindir / "postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                f"unix_socket_directories={self.sockets}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd="/",
            preexec_fn=_die_with_parent(signal.SIGQUIT, self.USER),  # SIGQUIT: immediate shutdown
        )
        log.close()
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.process.returncode}; see {self.log}")
            try:
                psycopg.connect(self.url("postgres"), autocommit=True).close()
                return
            except psycopg.OperationalError:
                time.sleep(0.2)
        raise RuntimeError(f"postgres did not accept connections within {timeout:.0f}s; see {self.log}")

    def stop(self, timeout: float = 60) -> None:
        """Fast shutdown (SIGINT): open sessions are ended, as in `pg_ctl stop -m fast`."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGQUIT)
            self.process.wait(timeout=30)

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')


class Redis:
    """redis-server on 127.0.0.1:`port`, without persistence (as scripts/start_services.sh starts
    it): a restart loses every message that was waiting."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self.log = root / "redis.log"
        self.process: subprocess.Popen | None = None
        self.binary = shutil.which("redis-server")
        if not self.binary:
            raise SystemExit("redis-server is not installed")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 30) -> None:
        if answers(self.port):
            raise SystemExit(f"something already listens on 127.0.0.1:{self.port}; choose another --redis-port")
        log = self.log.open("ab")
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.root),
                "--daemonize",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
            preexec_fn=_die_with_parent(signal.SIGKILL),
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}; see {self.log}")
            if self.ping():
                return
            time.sleep(0.1)
        raise RuntimeError(f"redis-server did not answer within {timeout:.0f}s; see {self.log}")

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2).ping())
        except redis.RedisError:
            return False

    def queue_length(self, queue: str = "celery") -> int | None:
        import redis

        try:
            return int(redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2).llen(queue))
        except redis.RedisError:
            return None

    def stop(self, timeout: float = 30) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
