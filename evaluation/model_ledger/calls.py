"""A model call the gateway passed on, recorded once its answer has ended: the fields both ledgers
keep (a trial's `evaluation.ModelCall`, a search's `GenerationModelCall`) and the one function that
writes them from the gateway's `CallRecord`.

`ModelCallFields` holds the fields the two tables declare alike; each table declares its own
route, model, status, usage_reported, latency and error, whose lengths and defaults differ between
them and would otherwise need a schema change. `model_call_create` writes all fourteen the same
way for both, with the table's owner columns (trial and attempt, or search, step and iteration).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db import models

if TYPE_CHECKING:  # the models modules import this one: it stays as light as they are
    from evaluation.gateway.ledger import CallRecord

# Cost is kept to the hundred-millionth of a dollar (the columns' 8 decimal places).
COST_QUANTUM = Decimal("0.00000001")
MAX_ERROR_CHARS = 2000


class ModelCallFields(models.Model):
    """The fields of a recorded model call that both ledgers' tables declare alike."""

    streamed = models.BooleanField(default=False)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # The tokens are the gateway's estimate (no usage sent, or the stream cut short): docs/results.md.
    usage_estimated = models.BooleanField(default=False)
    # The gateway refused or failed the call itself (its limits, its key, its own error).
    gateway_failure = models.BooleanField(default=False)
    retries = models.PositiveSmallIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


def model_call_create[Call: models.Model](table: type[Call], call: CallRecord, **owner: Any) -> Call:
    """Write `call` as one row of `table` (its owner's columns in `owner`), in its own statement:
    the next budget check of the run counts it. Text is cut to the columns and freed of NUL bytes
    (PostgreSQL stores none); a latency is never negative."""
    route_field = table._meta.get_field("route")
    # Each table's route column has its own length (30 for a trial's, 40 for a search's).
    route_chars = route_field.max_length if isinstance(route_field, models.Field) else None
    row: Call = table._default_manager.create(
        **owner,
        route=call.route[:route_chars],
        model=call.model[:200],
        streamed=call.streamed,
        status_code=call.status_code,
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        usage_reported=call.usage_reported,
        usage_estimated=call.usage_estimated,
        gateway_failure=call.gateway_failure,
        latency=max(call.latency, 0.0),
        retries=call.retries,
        cost_usd=None if call.cost_usd is None else call.cost_usd.quantize(COST_QUANTUM),
        error=call.error.replace("\x00", "")[:MAX_ERROR_CHARS],
    )
    return row
