"""The warm pool's refill rules, with plain objects for sandboxes: a broken environment is built
once more in the background and then left alone until a trial asks for it again."""

from __future__ import annotations

import threading

from evaluation.sandbox.pool import WarmPool


class Builds:
    """Counts builds per key; keys in `broken` fail."""

    def __init__(self, broken: set[str]) -> None:
        self.broken = broken
        self.count: dict[str, int] = {}
        self.destroyed: list[str] = []
        self._lock = threading.Lock()

    def make(self, key: str) -> str:
        with self._lock:
            self.count[key] = self.count.get(key, 0) + 1
        if key in self.broken:
            raise RuntimeError(f"setup of {key} exited 3")
        return f"{key}#{self.count[key]}"

    def destroy(self, member: str) -> None:
        self.destroyed.append(member)


def test_a_failed_environment_is_not_rebuilt_until_asked_again() -> None:
    builds = Builds(broken={"broken"})
    pool: WarmPool[str, str] = WarmPool("test", builds.make, builds.destroy, size=2)
    try:
        assert pool.take("broken") is None
        assert pool.wait_idle(10)
        # Idle for a while: with retries on a timer this would climb.
        assert not pool.wait_ready("broken", 0.5)
        assert builds.count["broken"] == 1
        assert pool.take("broken") is None  # a trial asks again: one more try
        assert pool.wait_idle(10)
        assert builds.count["broken"] == 2
    finally:
        pool.drain()


def test_a_healthy_environment_fills_and_a_broken_one_beside_it_does_not_stop_it() -> None:
    builds = Builds(broken={"broken"})
    pool: WarmPool[str, str] = WarmPool("test", builds.make, builds.destroy, size=2)
    try:
        pool.warm("broken")
        pool.warm("healthy")
        assert pool.wait_idle(10)
        assert pool.ready("healthy") == 2 and pool.ready("broken") == 0
        member = pool.take("healthy")
        assert member is not None and member.startswith("healthy#")
        assert pool.wait_idle(10)
        assert pool.ready("healthy") == 2 and builds.count["healthy"] == 3
        assert builds.count["broken"] == 1
    finally:
        pool.drain()
    assert sorted(builds.destroyed) == sorted(m for m in ("healthy#1", "healthy#2", "healthy#3") if m != member)


def test_drain_destroys_a_member_still_being_built() -> None:
    """A worker drains its pools and exits at once: a sandbox whose build was under way must be gone
    by the time drain returns, not left to the orphan sweep."""
    building, release = threading.Event(), threading.Event()
    destroyed: list[str] = []

    def make(key: str) -> str:
        building.set()
        release.wait(10)
        return f"{key}#1"

    pool: WarmPool[str, str] = WarmPool("test", make, destroyed.append, size=1)
    pool.warm("slow")
    assert building.wait(10)
    threading.Timer(0.2, release.set).start()
    pool.drain()
    assert destroyed == ["slow#1"] and pool.ready("slow") == 0
