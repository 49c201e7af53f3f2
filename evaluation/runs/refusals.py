"""The refusal of a launch, naming every problem found."""

from __future__ import annotations

from dataclasses import dataclass, field

from veriharm_site.refusals import Refused

# The first word of a launch refusal names the field it is about ("repetitions must be ...").
LAUNCH_FIELDS = ("selection", "agents", "protocol", "repetitions", "backend", "name", "test_timeout", "budget_usd")


@dataclass
class LaunchRefused(Refused):
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "; ".join(self.errors)

    def error_pairs(self) -> list[tuple[str, str]]:
        return [(e.split(" ", 1)[0] if e.split(" ", 1)[0] in LAUNCH_FIELDS else "", e) for e in self.errors]
