"""A run's USD budget as a launch reads it: one parser and one range for evaluation runs and
generation runs alike.

The range is 0 to 99,999,999.9999 USD, kept to four decimals:
- the top is what both tables can hold (`budget_usd` is DECIMAL(12, 4) in `evaluation.Run` and in
  `GenerationRun`): 100,000,000 is the first amount that would not fit, so nothing accepted here
  fails at the database;
- the bottom is zero, a budget too: a run that may spend nothing on models. Its model-calling work
  ends as stopped by its budget before a call is sent, and work that calls no model runs as usual
  (a generation run of scripted proposers on a zero budget is how a search ending on a spent USD
  budget is shown and tested). A negative amount has no meaning and is refused.

Messages lead with the field's API name, as every launch refusal does (`runs.refusals`).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from veriharm_site.refusals import Refused

FIELD = "budget_usd"
MIN_BUDGET_USD = Decimal(0)
# Exclusive: the first amount DECIMAL(12, 4) cannot hold.
MAX_BUDGET_USD = Decimal("100000000")
BUDGET_QUANTUM = Decimal("0.0001")


def budget_usd_parse(value: Any) -> Decimal | None:
    """The budget in USD from a form, the API or the command line (None or "": no budget), rounded
    to four decimals; raises Refused on `budget_usd` otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        budget = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise Refused(FIELD, f"{FIELD} must be a number, an amount in USD, got {value!r}") from None
    if not budget.is_finite() or not MIN_BUDGET_USD <= budget < MAX_BUDGET_USD:
        top = MAX_BUDGET_USD - BUDGET_QUANTUM
        raise Refused(FIELD, f"{FIELD} must be between {MIN_BUDGET_USD} and {top} USD, got {value!r}")
    return budget.quantize(BUDGET_QUANTUM)
