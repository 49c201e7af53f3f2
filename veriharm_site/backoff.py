"""How long background work waits before it tries again after an infrastructure failure.

One schedule for every retry of that kind (a trial's attempts, a generation search's steps, an
import job): exponential from a base, capped, with jitter. Retries used to come every two seconds,
three within about four: a worker restarting, a sandbox build finishing or a full disk being
cleared outlasted all of them. Spaced out, they outlive a passing fault; the jitter keeps many
trials that failed together (a host's sandbox system gone) from coming back together.

`Backoff` is pure; `infrastructure_retry_delay` reads its base and cap from the settings
(`VERIHARM_RETRY_BACKOFF_SECONDS`, `VERIHARM_RETRY_BACKOFF_MAX_SECONDS`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class Backoff:
    """Retry `n` (1 for the first) waits between half and all of min(cap, base * factor ** (n - 1))
    seconds ("equal jitter": never less than half the step, never past the cap)."""

    base: float
    cap: float
    factor: float = 3.0

    def ceiling(self, retry: int) -> float:
        if retry < 1:
            raise ValueError(f"retries count from 1, got {retry}")
        # min() first on the exponent's side: a large retry count must not overflow the float.
        steps = min(retry - 1, 64)
        return max(0.0, min(self.cap, self.base * self.factor**steps))

    def delay(self, retry: int, uniform: Callable[[], float] = random.random) -> float:
        ceiling = self.ceiling(retry)
        return ceiling / 2 + uniform() * ceiling / 2


def infrastructure_backoff() -> Backoff:
    return Backoff(
        base=float(settings.VERIHARM_RETRY_BACKOFF_SECONDS), cap=float(settings.VERIHARM_RETRY_BACKOFF_MAX_SECONDS)
    )


def infrastructure_retry_delay(retry: int) -> float:
    """Seconds before retry `retry` (1 for the first) of work that failed on infrastructure."""
    return infrastructure_backoff().delay(max(retry, 1))


# How often work that found the sandbox system still being built looks again: soon at first (a
# build is often in its last seconds), then every 15 s at most, so it starts within seconds of the end.
SYSTEM_BUILD_POLL = Backoff(base=2.0, cap=15.0, factor=2.0)


def system_build_poll_delay(look: int) -> float:
    """Seconds before look `look` (1 for the first) at a sandbox system that was still being built."""
    return SYSTEM_BUILD_POLL.delay(max(look, 1))
