"""The concurrency and rate limits of one trial attempt's gateway.

Each gateway holds its own limiter, so a trial that fills its slots (or leaves a call hanging)
slows only itself, never another trial of the same worker. The endpoint's own limits across
trials are the upstream's to enforce (its 429s are retried with backoff): a worker running N
trials at once may send N times a trial's concurrency.
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
