"""Per-endpoint concurrency and rate limits, shared by every gateway of one worker process.

A worker process runs one trial at a time per pool slot, but a harness may send several calls at
once and several gateways may run in one process (threads); the limits sit in a process-wide
registry keyed by the endpoint, so they hold across all of them. They do not reach across worker
processes: size them per process (a deployment with N worker processes allows N times as much).
"""

from __future__ import annotations

import threading
import time
from collections import deque


class LimitTimeout(Exception):
    """A slot did not come free before the call's deadline."""


class EndpointLimiter:
    def __init__(self, max_concurrency: int, requests_per_minute: int) -> None:
        self.max_concurrency = max_concurrency
        self.requests_per_minute = requests_per_minute
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._lock = threading.Lock()
        self._starts: deque[float] = deque()

    def _wait_for_rate(self, deadline: float) -> None:
        """Block until a request may start under requests_per_minute (a sliding 60 s window)."""
        if self.requests_per_minute <= 0:
            return
        while True:
            with self._lock:
                now = time.monotonic()
                while self._starts and now - self._starts[0] >= 60.0:
                    self._starts.popleft()
                if len(self._starts) < self.requests_per_minute:
                    self._starts.append(now)
                    return
                wait = 60.0 - (now - self._starts[0])
            if now + wait > deadline:
                raise LimitTimeout(
                    f"the endpoint's limit of {self.requests_per_minute} requests per minute "
                    "leaves no slot before the call's deadline"
                )
            time.sleep(min(wait, 1.0))

    def acquire(self, deadline: float) -> None:
        """Take one of the endpoint's concurrent slots and a start within its rate, for one upstream
        request; the caller releases the slot when the answer has been read to its end."""
        if not self._slots.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            raise LimitTimeout(
                f"all {self.max_concurrency} concurrent slots of the endpoint stayed busy until the call's deadline"
            )
        try:
            self._wait_for_rate(deadline)
        except BaseException:
            self._slots.release()
            raise

    def release(self) -> None:
        self._slots.release()


_registry: dict[tuple[str, int, int], EndpointLimiter] = {}
_registry_lock = threading.Lock()


def limiter_for(endpoint: str, max_concurrency: int, requests_per_minute: int) -> EndpointLimiter:
    """The process's limiter of one endpoint with these limits (agents with other limits get their own)."""
    key = (endpoint, max_concurrency, requests_per_minute)
    with _registry_lock:
        limiter = _registry.get(key)
        if limiter is None:
            limiter = _registry[key] = EndpointLimiter(max_concurrency, requests_per_minute)
        return limiter
