"""The refusal of a launch, naming every problem found."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LaunchRefused(Exception):
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "; ".join(self.errors)
