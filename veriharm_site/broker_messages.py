"""Which tasks wait in the broker's ready queue, read without consuming anything.

The recovery sweep asks this before it publishes a task again: a trial or an import job whose
message still waits to be delivered needs nothing, one without a message (a lost or failed
publish, or a message a killed worker took with it) needs a new one. Only the transports this
project ships are read (Redis and kombu's filesystem transport); for any other the answer is
None, "unknown", and callers fall back to what they can decide without it.

Messages a worker has taken but not acknowledged (Redis' `unacked` hash) are deliberately not
counted: a live worker runs them at once (prefetch 1), and a dead one would keep them hidden
for the whole visibility timeout, which is what the sweep exists to avoid waiting for.
"""

from __future__ import annotations

import base64
import json
import logging
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery

logger = logging.getLogger(__name__)

WaitingTasks = dict[str, set[int]]


def _first_argument(message: dict[str, Any]) -> tuple[str, int] | None:
    """(task name, first positional argument) of a Celery protocol 2 message, if it has them."""
    headers = message.get("headers") or {}
    name = headers.get("task")
    if not name:
        return None
    body: Any = message.get("body", "")
    if (message.get("properties") or {}).get("body_encoding") == "base64":
        body = base64.b64decode(body)
    try:
        args, kwargs, _embed = json.loads(body)
    except (ValueError, TypeError):
        return None
    value = args[0] if args else next(iter(kwargs.values()), None)
    return (name, value) if isinstance(value, int) else None


def _collect(raw_messages: Iterable[bytes | str], found: WaitingTasks) -> None:
    for raw in raw_messages:
        try:
            parsed = _first_argument(json.loads(raw))
        except (ValueError, TypeError, AttributeError):
            continue
        if parsed is not None:
            found[parsed[0]].add(parsed[1])


def waiting_tasks(app: Celery, queues: list[str] | None = None) -> WaitingTasks | None:
    """Task name -> first arguments of every message waiting in `queues` (every configured queue
    when None: trials wait in their backend's queue); None when this broker cannot be read."""
    queues = queues or sorted({app.conf.task_default_queue, *(q.name for q in app.conf.task_queues or ())})
    found: WaitingTasks = defaultdict(set)
    try:
        with app.connection_for_read() as conn:
            # The transport's own channel (redis or filesystem): what is read below is theirs, not
            # the abstract StdChannel's that kombu's stubs give, and partly private (no stub has it).
            channel: Any = conn.default_channel
            driver = conn.transport.driver_type
            if driver == "redis":
                client = channel.client
                # kombu prefixes the keys of the commands it sends itself; LRANGE is not among them.
                prefix = getattr(channel, "global_keyprefix", "")
                for queue in queues:
                    for priority in channel.priority_steps:
                        _collect(client.lrange(prefix + channel._q_for_pri(queue, priority), 0, -1), found)
            elif driver == "filesystem":
                folder = Path(channel.data_folder_in)
                for queue in queues:
                    files = folder.glob(f"*.{queue}.msg")
                    _collect((_read(path) for path in files), found)
            else:
                return None
    except Exception:  # the sweep must survive a broker that is down for a moment
        logger.exception("could not read the broker's waiting messages")
        return None
    return dict(found)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # consumed between the listing and the read: it was delivered
        return b""
