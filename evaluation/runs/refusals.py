"""The refusal of a launch, naming every problem found."""

from __future__ import annotations

from collections.abc import Iterable

from veriharm_site.refusals import Refused

# The first word of a launch refusal names the field it is about ("repetitions must be ...").
LAUNCH_FIELDS = ("selection", "agents", "protocol", "repetitions", "backend", "name", "test_timeout", "budget_usd")


# How the launch page names each field, in place of the API's name a refusal starts with.
FIELD_WORDS = {
    "selection": "The selection",
    "agents": "Agents",
    "protocol": "Protocol",
    "repetitions": "Repetitions",
    "backend": "Backend",
    "name": "Name",
    "test_timeout": "The test timeout",
    "budget_usd": "The USD budget",
}


def error_in_words(error: str) -> str:
    """A launch refusal as the page says it: led by the field's words, not its API name."""
    field = _field_of(error)
    return FIELD_WORDS[field] + error[len(field) :] if field else error


def _field_of(error: str) -> str:
    first = error.split(" ", 1)[0]
    return first if first in LAUNCH_FIELDS else ""


class LaunchRefused(Refused):
    """Nothing was launched; `errors` holds every problem, each a sentence led by its field's name."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors = list(errors)
        super().__init__(problems=[(_field_of(error), error) for error in self.errors])
