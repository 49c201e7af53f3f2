"""The one USD budget range of evaluation and generation launches (`evaluation.model_ledger.budgets`)."""

from decimal import Decimal

import pytest

from evaluation.model_ledger.budgets import budget_usd_parse
from veriharm_site.refusals import Refused


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        (None, None),
        ("", None),
        ("  ", None),
        ("0", Decimal("0.0000")),
        (Decimal("2.5"), Decimal("2.5000")),
        (" 3 ", Decimal("3.0000")),
        ("99999999.9999", Decimal("99999999.9999")),
    ],
)
def test_a_budget_in_the_range_is_kept_to_four_decimals(value: object, parsed: Decimal | None) -> None:
    assert budget_usd_parse(value) == parsed


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("-1", "between 0 and 99999999.9999 USD"),
        ("-0.0001", "between 0"),
        ("100000000", "between 0 and 99999999.9999 USD"),
        ("NaN", "between 0"),
        ("Infinity", "between 0"),
        ("lots", "a number"),
    ],
)
def test_a_budget_outside_the_range_is_refused_on_its_field(value: str, words: str) -> None:
    with pytest.raises(Refused) as refused:
        budget_usd_parse(value)
    assert refused.value.field == "budget_usd"
    assert refused.value.message.startswith("budget_usd must be") and words in refused.value.message
