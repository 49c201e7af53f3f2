"""A run's budget held by the model calls in flight, and the worker's bounded database slots for
the gateway's threads: what the trials' and the generation searches' ledgers share.

Every ledger method is one short transaction, and when it runs on a thread of the gateway's socket
server it gives its database connection back at once: a call waiting for a slot or for its upstream
holds no connection. At most VERIHARM_GATEWAY_DB_CONNECTIONS of those threads in a worker process use
the database at the same moment, so a harness sending many calls at once cannot fill the server's
max_connections.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection
from django.db.models import Model, Sum
from django.utils import timezone

from evaluation.gateway.ledger import BudgetSpent, Reservation

_connections_lock = threading.Lock()
_connections: threading.BoundedSemaphore | None = None


def _connection_slots() -> threading.BoundedSemaphore:
    global _connections
    with _connections_lock:
        if _connections is None:
            _connections = threading.BoundedSemaphore(max(int(settings.VERIHARM_GATEWAY_DB_CONNECTIONS), 1))
        return _connections


@contextmanager
def database_slot(owner: int) -> Iterator[None]:
    """One of the worker's bounded database slots for a ledger's write; on a gateway thread (not
    `owner`, the thread that runs the agent) the connection is given back at once."""
    with _connection_slots():
        try:
            yield
        finally:
            if threading.get_ident() != owner and not connection.in_atomic_block:
                connection.close()


def budget_hold(
    hold_model: type[Model],
    *,
    run_id: int,
    spent: Decimal,
    budget: Decimal,
    amount: Decimal,
    hold_seconds: float,
    holder: dict[str, int],
) -> Reservation:
    """Hold `amount` of a run's budget unless what it spent and what live holds keep already reach
    it (raises BudgetSpent). Called in the transaction that locked the run's row, so that the check
    and the hold are one step across every worker. Trials' and generation searches' ledgers share it,
    each with its own hold model (run_id, amount_usd, expires_at and its holder's column)."""
    now = timezone.now()
    held = hold_model._default_manager.filter(run_id=run_id, expires_at__gt=now).aggregate(s=Sum("amount_usd"))["s"]
    committed = spent + Decimal(held or 0)
    if committed >= budget:
        raise BudgetSpent(budget, committed)
    hold = hold_model._default_manager.create(
        run_id=run_id, amount_usd=amount, expires_at=now + timedelta(seconds=hold_seconds), **holder
    )
    return Reservation(id=hold.pk, amount_usd=amount)
