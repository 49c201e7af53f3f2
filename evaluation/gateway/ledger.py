"""What the gateway asks of whoever keeps its accounts (pure): reserve a call's cost under the run's
budget before it is forwarded, and settle it with what the call really cost, once, when it ends.

The worker hands a gateway an implementation (`evaluation.trials.gateway_ledger.RunLedger` keeps them in
the database); the gateway itself knows nothing of where the figures live. A gateway without a ledger
(a harness tried out on its own) keeps no accounts and has no budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol


class BudgetSpent(Exception):
    """The run's budget leaves nothing for another call: what is spent and held, for the message."""

    def __init__(self, budget_usd: Decimal, committed_usd: Decimal) -> None:
        super().__init__(f"${committed_usd:.4f} of ${budget_usd} spent or held by calls in flight")
        self.budget_usd = budget_usd
        self.committed_usd = committed_usd


@dataclass(frozen=True)
class Reservation:
    """A call's share of the budget, held from before it is forwarded until it is settled."""

    id: int
    amount_usd: Decimal


@dataclass(frozen=True)
class CallRecord:
    """One model call as the gateway saw it end."""

    route: str
    model: str
    streamed: bool
    status_code: int
    input_tokens: int
    output_tokens: int
    usage_reported: bool
    # The tokens are the gateway's own estimate (the upstream sent no usage, or the stream was cut).
    usage_estimated: bool
    # The gateway itself failed or refused the call (its limits, its key, its own error), not the
    # upstream nor the budget: the trial's ending is then not the agent's.
    gateway_failure: bool
    latency: float
    retries: int
    cost_usd: Decimal | None
    error: str = ""


class Ledger(Protocol):
    @property
    def budget_usd(self) -> Decimal | None:
        """The run's budget (None: none, and `reserve` is never called)."""
        ...

    def reserve(self, amount_usd: Decimal, hold_seconds: float) -> Reservation:
        """Hold `amount_usd` of the budget for a call about to be forwarded, atomically with the check
        that the budget is not already spent or held; raises BudgetSpent. The hold lapses by itself
        after `hold_seconds` (a worker that died never settles)."""
        ...

    def settle(self, reservation: Reservation | None, call: CallRecord) -> None:
        """Record the call and give back its reservation, in one step."""
        ...

    def release_all(self) -> None:
        """Give back every reservation this ledger still holds (the gateway is closing)."""
        ...
