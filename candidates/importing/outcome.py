"""What an import answers: a summary of what it wrote, or a refusal naming every bad line."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from veriharm_site.refusals import Refused

from ..pipeline import format as fmt

SHOWN_ERRORS = 20


@dataclass
class ImportSummary:
    created: int = 0
    unchanged: int = 0
    replaced: int = 0
    searches_created: int = 0
    searches_unchanged: int = 0
    searches_replaced: int = 0
    source_tasks_created: int = 0
    # The pks of every candidate the import held (created, replaced or unchanged), so an import job
    # can link them to itself; not one of the counts.
    candidate_pks: list[int] = field(default_factory=list, repr=False, compare=False)

    def counts(self) -> dict[str, int]:
        """The counts, as a job keeps them."""
        return {name: value for name, value in asdict(self).items() if name != "candidate_pks"}

    def __str__(self) -> str:
        return (
            f"candidates: {self.created} created, {self.unchanged} unchanged, {self.replaced} replaced; "
            f"searches: {self.searches_created} created, {self.searches_unchanged} unchanged, "
            f"{self.searches_replaced} replaced; source tasks: {self.source_tasks_created} created"
        )


class ImportRefused(Refused):
    """Nothing was imported; `errors` names every bad line (file, line, field, message)."""

    def __init__(self, errors: list[fmt.FormatError] | None = None) -> None:
        self.errors = list(errors or [])
        first = self.errors[0] if self.errors else None
        super().__init__(first.field if first else "files", str(self))

    def __str__(self) -> str:
        shown = "\n".join(str(e) for e in self.errors[:SHOWN_ERRORS])
        more = len(self.errors) - SHOWN_ERRORS
        return shown + (f"\n... and {more} more errors" if more > 0 else "")

    def error_pairs(self) -> list[tuple[str, str]]:
        return [(e.field, str(e)) for e in self.errors]
