"""A search's model calls and the generation run's USD budget: the ledger every gateway of a search
is handed (a model-mode target's in a rollout, the proposer's, the judges'), and the target's
gateway for a rollout (the trials' gateway). Calls are recorded, and the budget held, as a
trial's are (`evaluation.model_ledger`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F

from evaluation.agents.upstreams import upstream_transport
from evaluation.gateway import Gateway, TrialGateway, Upstream, serve
from evaluation.gateway.ledger import CallRecord, Reservation
from evaluation.model_ledger.calls import model_call_create
from evaluation.model_ledger.holds import budget_hold, database_slot

from .models import GenerationBudgetHold, GenerationModelCall, GenerationRun


class SearchLedger:
    """The ledger of a search's model calls in one step: a model-mode target's in a rollout, or the
    proposer's or a judge's. Before a call is forwarded, its most possible cost is held against the
    run's USD budget, atomically with the check that what the run has spent and what calls in flight
    hold leave room (the run's row locked, across every worker); when it ends, the call is kept, its
    cost charged to the run and its hold given back, in one step."""

    def __init__(self, *, run_id: int, search_id: int, step_kind: str, iteration: int, budget_usd: Decimal | None):
        self.run_id = run_id
        self.search_id = search_id
        self.step_kind = step_kind
        self.iteration = iteration
        self._budget_usd = budget_usd
        # The worker's own thread keeps its connection; the gateway's threads give theirs back.
        self._owner = threading.get_ident()

    @property
    def budget_usd(self) -> Decimal | None:
        return self._budget_usd

    def reserve(self, amount_usd: Decimal, hold_seconds: float) -> Reservation:
        assert self._budget_usd is not None
        amount = amount_usd.quantize(Decimal("0.00000001"))
        with database_slot(self._owner), transaction.atomic():
            spent = GenerationRun.objects.select_for_update().values_list("spent_usd", flat=True).get(pk=self.run_id)
            return budget_hold(
                GenerationBudgetHold,
                run_id=self.run_id,
                spent=spent,
                budget=self._budget_usd,
                amount=amount,
                hold_seconds=hold_seconds,
                holder={"search_id": self.search_id},
            )

    def settle(self, reservation: Reservation | None, call: CallRecord) -> None:
        with database_slot(self._owner), transaction.atomic():
            model_call_create(
                GenerationModelCall, call, search_id=self.search_id, step_kind=self.step_kind, iteration=self.iteration
            )
            if call.cost_usd:
                GenerationRun.objects.filter(pk=self.run_id).update(spent_usd=F("spent_usd") + call.cost_usd)
            if reservation is not None:
                GenerationBudgetHold.objects.filter(pk=reservation.id).delete()

    def release_all(self) -> None:
        """Steps of a search run one after another, so what it still holds is this step's (or a
        dead worker's, given back as that worker's step is done again)."""
        with database_slot(self._owner):
            GenerationBudgetHold.objects.filter(search_id=self.search_id).delete()


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
    # As for trials: an upstream answered in the worker (`agents.upstreams`) has its transport.
    with serve(Gateway(upstream, ledger=ledger, transport=upstream_transport(upstream)), socket_dir) as running:
        yield running
