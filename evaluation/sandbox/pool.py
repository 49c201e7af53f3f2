"""Warm pools: sandboxes made ahead of time, each handed out once, never given back.

Building a sandbox (a tmpfs seeded from the system, a container started with network
none) is most of what a short trial costs; the pool does that work before the trial asks
for it, in a background thread at low CPU priority. What a pool holds has never run
anything of a trial: an agent sandbox is the environment's base system with nothing of
the task written in yet, a test-phase shell holds the same base content (the agent's
changes to it and the test module come from the trial that takes it). A member that was handed out belongs to its taker, who
destroys it; nothing ever comes back into the pool.

Bounds: at most ``size`` ready members per key, and at most ``max_keys`` keys (the least
recently asked for is emptied first). A key whose build failed is not built again until a
trial asks for it again: a broken environment must not keep an idle worker rebuilding it. Members are ordinary sandboxes of their backend, so
the backend's own bookkeeping covers them: while this process lives they count as its live
sandboxes (the orphan sweep leaves them alone), once it dies they are orphans like any
other and the sweep removes them. A process that stops normally calls ``drain``: a Celery worker
from its shutdown signals (``evaluation.trials.sandboxes``), since a prefork pool child leaves
through ``os._exit``, which skips ``atexit``; any other interpreter at exit, below.

A pool belongs to the process that made it: after a fork (a Celery prefork child) the
child starts empty and leaves the parent's members to the parent.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

# Refills run at this niceness (their own thread, and the cp/mount/... they start), so a
# trial's own work on a busy host comes first.
REFILL_NICENESS = 10
_POOLS: weakref.WeakSet[WarmPool] = weakref.WeakSet()


class WarmPool(Generic[K, T]):  # noqa: UP046 - PEP 695 syntax when this class next changes
    def __init__(
        self,
        name: str,
        make: Callable[[K], T],
        destroy: Callable[[T], None],
        *,
        size: int,
        max_keys: int = 4,
    ) -> None:
        if size < 0 or max_keys < 1:
            raise ValueError("a pool needs size >= 0 and max_keys >= 1")
        self.name = name
        self.size = size
        self.max_keys = max_keys
        self._make = make
        self._destroy = destroy
        self._ready: OrderedDict[K, list[T]] = OrderedDict()
        self._building: dict[K, int] = {}
        self._failed: set[K] = set()
        self._lock = threading.Condition()
        self._pid = os.getpid()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.hits = 0
        self.misses = 0
        _POOLS.add(self)

    @property
    def enabled(self) -> bool:
        return self.size > 0

    def take(self, key: K) -> T | None:
        """A ready member for ``key`` (its taker now owns it), or None: the caller builds its own.
        Either way the key is now wanted, and the pool refills it in the background."""
        if not self.enabled:
            return None
        with self._lock:
            self._forget_after_fork()
            if self._closed:
                return None
            members = self._ready.setdefault(key, [])
            self._ready.move_to_end(key)
            self._failed.discard(key)
            member = members.pop(0) if members else None
            if member is None:
                self.misses += 1
            else:
                self.hits += 1
            evicted = self._evict()
            self._start_thread()
            self._lock.notify_all()
        for old in evicted:
            self._discard(old)
        return member

    def warm(self, key: K) -> None:
        """Ask for ``key`` to be kept ready without taking anything."""
        if not self.enabled:
            return
        with self._lock:
            self._forget_after_fork()
            if self._closed:
                return
            self._ready.setdefault(key, [])
            self._ready.move_to_end(key)
            self._failed.discard(key)
            evicted = self._evict()
            self._start_thread()
            self._lock.notify_all()
        for old in evicted:
            self._discard(old)

    def ready(self, key: K) -> int:
        with self._lock:
            return len(self._ready.get(key, ()))

    def wait_ready(self, key: K, timeout: float) -> bool:
        """Block until ``key`` has ``size`` members ready (benchmarks: a pool in steady state)."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._ready.get(key, ())) >= self.size, timeout)

    def wait_idle(self, timeout: float) -> bool:
        """Block until no build is under way and none is wanted (every key full, or failed and not
        asked for since): what the pool holds stays as it is until someone takes or warms."""
        with self._lock:
            return self._lock.wait_for(lambda: not any(self._building.values()) and self._wanted() is None, timeout)

    def members(self) -> list[T]:
        """The members ready now, every key (they stay in the pool)."""
        with self._lock:
            return [m for ms in self._ready.values() for m in ms]

    def drain(self, timeout: float = 60.0) -> None:
        """Destroy every ready member and stop refilling; a member still being built is destroyed
        when its build ends, which this waits for (at most ``timeout`` seconds): the process may
        exit right after, and a half-built sandbox would be left behind. Idempotent."""
        with self._lock:
            self._closed = True
            mine = self._pid == os.getpid()
            members = [m for ms in self._ready.values() for m in ms] if mine else []
            self._ready.clear()
            self._lock.notify_all()
        for member in members:
            self._discard(member)
        if mine:
            with self._lock:
                # The refill thread discards what it builds once the pool is closed, and counts it
                # as building until then.
                if not self._lock.wait_for(lambda: not any(self._building.values()), timeout):
                    logger.warning("warm pool %s: a sandbox still being built is left to the orphan sweep", self.name)

    # -- internals ---------------------------------------------------------------
    def _forget_after_fork(self) -> None:
        if self._pid != os.getpid():
            # The parent's members and thread are the parent's; a child starts empty.
            self._pid = os.getpid()
            self._ready = OrderedDict()
            self._building = {}
            self._failed = set()
            self._thread = None

    def _evict(self) -> list[T]:
        evicted: list[T] = []
        while len(self._ready) > self.max_keys:
            key, members = self._ready.popitem(last=False)
            self._failed.discard(key)
            evicted.extend(members)
        return evicted

    def _start_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._refill, name=f"warm-pool-{self.name}", daemon=True)
            self._thread.start()

    def _wanted(self) -> K | None:
        for key, members in reversed(self._ready.items()):  # most recently asked for first
            if key not in self._failed and len(members) + self._building.get(key, 0) < self.size:
                return key
        return None

    def _refill(self) -> None:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), REFILL_NICENESS)
        while True:
            with self._lock:
                key = None
                while not self._closed and self._pid == os.getpid():
                    key = self._wanted()
                    if key is not None:
                        break
                    self._lock.wait()
                if self._closed or self._pid != os.getpid() or key is None:
                    return
                self._building[key] = self._building.get(key, 0) + 1
            try:
                member = self._make(key)
            except Exception:
                logger.warning("warm pool %s could not build a sandbox", self.name, exc_info=True)
                member = None
            with self._lock:
                keep = not self._closed and key in self._ready
                if member is not None and keep:
                    self._ready[key].append(member)
            if member is not None and not keep:
                self._discard(member)
            # Counted as building until it is kept or gone: wait_idle then sees a settled host.
            with self._lock:
                self._building[key] -= 1
                if member is None:
                    self._failed.add(key)
                self._lock.notify_all()

    def _discard(self, member: T) -> None:
        try:
            self._destroy(member)
        except Exception:  # the orphan sweep removes what could not be destroyed now
            logger.warning("warm pool %s could not destroy a sandbox", self.name, exc_info=True)


@atexit.register
def _drain_all() -> None:
    # A plain interpreter's normal exit (a management command, a benchmark). A Celery worker drains
    # its backends from its own shutdown signals instead (see the module's docstring).
    for pool in list(_POOLS):
        pool.drain()
