"""A lease's heartbeat: a thread that refreshes the lease while the work runs and notices when it
was lost. Every kind of leased work holds its lease the same way (`leases.lease_heartbeat`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import connection

logger = logging.getLogger(__name__)


class LeaseHeartbeat:
    """Calls `beat` every `interval` seconds; `beat` returns False once the lease is someone else's.
    Each kind of work's `beat` is `leases.lease_heartbeat` over its own `Lease` and token."""

    def __init__(self, beat: Callable[[], bool], what: str, interval: float) -> None:
        self.beat = beat
        self.what = what
        self.interval = interval
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{what.replace(' ', '-')}", daemon=True)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    if not self.beat():
                        self.lost.set()
                        return
                except Exception:  # a database hiccup must not end the work; the lease tolerates a missed beat
                    logger.exception("heartbeat of %s failed", self.what)
        finally:
            connection.close()

    def __enter__(self) -> LeaseHeartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 30)
