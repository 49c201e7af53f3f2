"""The query parameters of the run pages and API (`veriharm_site.queries`): one rule each, one
serializer for a page and its API twin."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from evaluation.models import TrialStatus
from veriharm_site.queries import WholeNumberField, optional_choice, page_number_field

SEARCH_MAX_CHARS = 200


def search_field(help_text: str) -> serializers.CharField:
    """`?q=`: words to look for, case-insensitive; empty (or only spaces) means no search."""
    return serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=True,
        max_length=SEARCH_MAX_CHARS,
        help_text=help_text,
    )


class RunTrialsQuery(serializers.Serializer):
    """A run's trials, all or of one status, or those a search finds (the API's parameters; its
    pagination reads `page`)."""

    status = optional_choice(dict(TrialStatus.choices), "Only the trials of this status")
    q = search_field("Only the trials whose candidate id, a step's command or output, or a test's output holds this")


class RunTrialsPageQuery(RunTrialsQuery):
    """A run's page: its trials a page at a time."""

    page = page_number_field()


class PairedComparisonQuery(serializers.Serializer):
    """Two agents of a run to compare (`a` against `b`), by id; the page picks its first two when
    both are absent, and both or neither must be given."""

    a = WholeNumberField(low=1, help_text="The id of system A, an agent of the run")
    b = WholeNumberField(low=1, help_text="The id of system B, another agent of the run (or of run_b)")
    run_b = WholeNumberField(
        low=1,
        help_text="Another run to take system B from, paired with this run's A on the items both evaluated "
        "(the same candidate with the same inputs: two runs of one release)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in ("a", "b") if attrs.get(name) is not None]
        # With another run, the page picks B of it when only A is given (its agent of A's name).
        if len(given) == 1 and not (given == ["a"] and attrs.get("run_b") is not None):
            missing = "b" if given == ["a"] else "a"
            raise serializers.ValidationError({missing: f"required with {given[0]}: the id of an agent of the run"})
        return attrs


class PairedComparisonApiQuery(PairedComparisonQuery):
    """The API names both agents."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        missing = {name: "required: the id of an agent of the run" for name in ("a", "b") if attrs.get(name) is None}
        if missing:
            raise serializers.ValidationError(missing)
        return attrs
