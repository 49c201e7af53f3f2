"""The model gateway's accounts in the database: budget holds and recorded calls of one trial attempt.

Every method is one short transaction, and when it runs on a thread of the gateway's socket server it
gives its database connection back at once: a call waiting for a slot or for its upstream holds no
connection. At most VERIHARM_GATEWAY_DB_CONNECTIONS of those threads in a worker process use the
database at the same moment, so a harness sending many calls at once cannot fill the server's
max_connections.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Model, Sum
from django.utils import timezone

from evaluation.gateway.ledger import BudgetSpent, CallRecord, Reservation
from evaluation.models import ModelBudgetHold, ModelCall, Run
from evaluation.trials.leases import model_call_record

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


class RunLedger:
    """The ledger of one trial attempt of a run with (or without) a budget."""

    def __init__(self, *, run_id: int, trial_id: int, attempt: int, budget_usd: Decimal | None) -> None:
        self.run_id = run_id
        self.trial_id = trial_id
        self.attempt = attempt
        self._budget_usd = budget_usd
        # The worker's own thread (the chat loop) keeps its connection as any task does.
        self._owner = threading.get_ident()

    @property
    def budget_usd(self) -> Decimal | None:
        return self._budget_usd

    def _database(self) -> AbstractContextManager[None]:
        return database_slot(self._owner)

    def reserve(self, amount_usd: Decimal, hold_seconds: float) -> Reservation:
        assert self._budget_usd is not None
        amount = amount_usd.quantize(Decimal("0.00000001"))
        with self._database(), transaction.atomic():
            # One reservation of the run at a time, across every worker: the check and the hold are one step.
            Run.objects.select_for_update().filter(pk=self.run_id).values_list("pk", flat=True).get()
            spent = ModelCall.objects.filter(trial__run_id=self.run_id).aggregate(s=Sum("cost_usd"))["s"] or 0
            return budget_hold(
                ModelBudgetHold,
                run_id=self.run_id,
                spent=Decimal(spent),
                budget=self._budget_usd,
                amount=amount,
                hold_seconds=hold_seconds,
                holder={"trial_id": self.trial_id},
            )

    def settle(self, reservation: Reservation | None, call: CallRecord) -> None:
        with self._database(), transaction.atomic():
            if self._budget_usd is not None:
                # Under the run's lock too: a reservation reads what was spent and what is held in two
                # statements, and a call settled between them would be counted in neither (its hold
                # gone, its record not yet seen), letting one more call through.
                Run.objects.select_for_update().filter(pk=self.run_id).values_list("pk", flat=True).get()
            model_call_record(
                trial_id=self.trial_id,
                attempt=self.attempt,
                route=call.route,
                model=call.model,
                streamed=call.streamed,
                status_code=call.status_code,
                input_tokens=call.input_tokens,
                output_tokens=call.output_tokens,
                usage_reported=call.usage_reported,
                usage_estimated=call.usage_estimated,
                gateway_failure=call.gateway_failure,
                latency=call.latency,
                retries=call.retries,
                cost_usd=call.cost_usd,
                error=call.error,
            )
            if reservation is not None:
                ModelBudgetHold.objects.filter(pk=reservation.id).delete()

    def release_all(self) -> None:
        with self._database():
            ModelBudgetHold.objects.filter(trial_id=self.trial_id).delete()
