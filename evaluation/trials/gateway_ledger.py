"""The model gateway's accounts in the database: budget holds and recorded calls of one trial attempt.

Every method is one short transaction in one of the worker's bounded database slots, and the call is
recorded as a generation search's are (`evaluation.model_ledger`: `database_slot`, `budget_hold`,
`model_call_create`).
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from decimal import Decimal

from django.db import transaction
from django.db.models import Sum

from evaluation.gateway.ledger import CallRecord, Reservation
from evaluation.model_ledger.calls import model_call_create
from evaluation.model_ledger.holds import budget_hold, database_slot
from evaluation.models import ModelBudgetHold, ModelCall, Run


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
            model_call_create(ModelCall, call, trial_id=self.trial_id, attempt=self.attempt)
            if reservation is not None:
                ModelBudgetHold.objects.filter(pk=reservation.id).delete()

    def release_all(self) -> None:
        with self._database():
            ModelBudgetHold.objects.filter(trial_id=self.trial_id).delete()
