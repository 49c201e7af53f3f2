"""A model-mode target's gateway in a search's rollout: the trials' gateway, handed a ledger that
records each call for the search and charges it to the generation run's USD budget (which the
proposer's and judges' calls draw on too)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F

from evaluation.gateway import Gateway, TrialGateway, Upstream, serve
from evaluation.gateway.ledger import BudgetSpent, CallRecord, Reservation
from evaluation.trials.gateway_ledger import database_slot

from .models import GenerationModelCall, GenerationRun


class SearchLedger:
    """The ledger of one rollout of a search. A call is checked against what the run has spent when
    it is about to be forwarded; calls of other searches in flight at that moment are not held
    against it, so the run may end a few calls over its budget."""

    def __init__(self, *, run_id: int, search_id: int, step_kind: str, iteration: int, budget_usd: Decimal | None):
        self.run_id = run_id
        self.search_id = search_id
        self.step_kind = step_kind
        self.iteration = iteration
        self._budget_usd = budget_usd
        self._owner = threading.get_ident()

    @property
    def budget_usd(self) -> Decimal | None:
        return self._budget_usd

    def reserve(self, amount_usd: Decimal, hold_seconds: float) -> Reservation:
        assert self._budget_usd is not None
        with database_slot(self._owner):
            spent = GenerationRun.objects.values_list("spent_usd", flat=True).get(pk=self.run_id)
        if spent >= self._budget_usd:
            raise BudgetSpent(self._budget_usd, spent)
        return Reservation(id=0, amount_usd=amount_usd)

    def settle(self, reservation: Reservation | None, call: CallRecord) -> None:
        with database_slot(self._owner), transaction.atomic():
            GenerationModelCall.objects.create(
                search_id=self.search_id,
                step_kind=self.step_kind,
                iteration=self.iteration,
                route=call.route[:40],
                model=call.model[:200],
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
            if call.cost_usd:
                GenerationRun.objects.filter(pk=self.run_id).update(spent_usd=F("spent_usd") + call.cost_usd)

    def release_all(self) -> None:
        """Nothing is held (see the class)."""


@contextmanager
def gateway_for_rollout(
    *, run_id: int, search_id: int, step_kind: str, iteration: int, budget_usd: Decimal | None, upstream: Upstream
) -> Iterator[TrialGateway]:
    ledger = SearchLedger(
        run_id=run_id, search_id=search_id, step_kind=step_kind, iteration=iteration, budget_usd=budget_usd
    )
    socket_dir = None
    if settings.VERIHARM_GATEWAY_SOCKET_DIR:
        # A worker in a container shares this directory with the Docker engine's host, as for trials.
        socket_dir = Path(settings.VERIHARM_GATEWAY_SOCKET_DIR)
        socket_dir.mkdir(mode=0o711, parents=True, exist_ok=True)
    with serve(Gateway(upstream, ledger=ledger), socket_dir) as running:
        yield running
